// Matrix-vector product, one matrix element per thread: row r's columns are split into
// 2^shift chunks of blockDim.x threads, thread block b handling row b >> shift, chunk
// b & (2^shift - 1); each thread adds m[r][c] * v[c] into out[r] atomically (no loop: a
// loop's live registers cost VAL tokens). m is row-major, rows x cols.
__global__ void matvec(const int* m, const int* v, int* out, int cols, int shift) {
    int r = blockIdx.x >> shift;
    int c = (blockIdx.x & ((1 << shift) - 1)) * blockDim.x + threadIdx.x;
    if (c < cols) atomicAdd(&out[r], m[r * cols + c] * v[c]);
}
