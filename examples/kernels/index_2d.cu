// 2-D indexing of a flat array: element i is (row i / width, column i % width)
__global__ void index_2d(const int* m, int* t, int width, int height) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width * height) {
        int row = i / width, col = i % width;
        t[col * height + row] = m[i] + 100 * row + col;
    }
}
