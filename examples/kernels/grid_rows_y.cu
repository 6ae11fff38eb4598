// One block per row, the grid laid out along y: block (0, r) scales row r of a matrix by
// r + 1 and sums the scaled row through shared memory (a tree over blockDim.x threads).
__global__ void grid_rows_y(const int* m, int* scaled, int* rowsum, int cols) {
    __shared__ int part[8];
    int r = blockIdx.y;
    int c = threadIdx.x;
    int v = m[r * cols + c] * (r + 1);
    scaled[r * cols + c] = v;
    part[c] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (c < half)
            part[c] += part[c + half];
        __syncthreads();
    }
    if (c == 0)
        rowsum[r] = part[0];
}
