// Dot product, one element per thread over a grid of 16-thread blocks: every thread adds
// its product into out[0] atomically (no loop: a loop's live registers cost VAL tokens).
__global__ void dot(const int* a, const int* b, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, a[i] * b[i]);
}
