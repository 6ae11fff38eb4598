// A 2-D grid-stride loop: columns by blockIdx.x * blockDim.x + threadIdx.x, rows from
// blockIdx.y * blockDim.y + threadIdx.y in steps of blockDim.y * gridDim.y, so a grid of
// fewer rows than the matrix still reaches every row.
__global__ void grid_dim_y(int* a, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y)
        a[r * cols + c] = 2 * a[r * cols + c] + 100 * r + c;
}
