// Matrix-vector product: each thread owns a row and loops over the columns.
__global__ void matvec(const int* m, const int* v, int* out, int rows, int cols) {
    int r = threadIdx.x;
    if (r < rows) {
        int acc = 0;
        #pragma unroll 1
        for (int c = 0; c < cols; c++) {
            acc += m[r * cols + c] * v[c];
        }
        out[r] = acc;
    }
}
