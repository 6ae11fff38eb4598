// The CUDA programming guide's tiled transpose: each 4x4 block reads a tile of a
// rows x cols matrix into shared memory row by row (a padded column avoids bank
// conflicts on a GPU), waits, and writes it out transposed, again row by row, from
// the transposed tile. Threads past the matrix's edge read and write nothing.
#define TILE 4
__global__ void tile_transpose_2d(const int* in, int* out, int rows, int cols) {
    __shared__ int tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // the output's column is the input's row
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
