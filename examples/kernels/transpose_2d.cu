// A rows x cols matrix transposed by a 2-D grid of 2-D blocks: the thread at (x, y) of
// block (bx, by) moves element (row, col) = (by * blockDim.y + y, bx * blockDim.x + x).
// The grid covers more than the matrix, so the edge threads do nothing.
__global__ void transpose_2d(const int* in, int* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols)
        out[col * rows + row] = in[row * cols + col];
}
