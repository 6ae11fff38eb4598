// The 5-point Laplacian of a w x h image (4 * centre minus its neighbours; a neighbour
// outside the image counts as 0), one thread per pixel on 3x3 blocks: blockDim is not a
// power of two, so threadIdx.x and threadIdx.y are a true division of the thread's index.
__global__ void stencil_2d(const int* in, int* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    int s = 4 * in[y * w + x];
    if (x > 0) s -= in[y * w + x - 1];
    if (x < w - 1) s -= in[y * w + x + 1];
    if (y > 0) s -= in[(y - 1) * w + x];
    if (y < h - 1) s -= in[(y + 1) * w + x];
    out[y * w + x] = s;
}
