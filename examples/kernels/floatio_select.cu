// Floats moved, never computed: each thread takes a float through __shared__ memory
// (reversed), keeps it or takes the float parameter instead (a select), and writes the
// magnitude's bit pattern as an int (__float_as_int). Every float keeps its 32 bits:
// NaN, -0.0, the smallest subnormal and the largest float come out as they went in.
__global__ void select_floats(const float* in, const int* keep, float fallback, float* out, int* bits) {
    __shared__ float stage[16];
    int i = threadIdx.x;
    stage[i] = in[i];
    __syncthreads();
    float v = stage[blockDim.x - 1 - i];
    out[i] = keep[i] > 0 ? v : fallback;
    bits[i] = __float_as_int(v) & 0x7fffffff;
}
