// atomicSub, atomicAnd and atomicXor from two thread blocks on int and unsigned words:
// a balance, a mask of values never seen, a parity and an unsigned countdown that wraps.
__global__ void atomic_sub_and_xor(const int* x, int* acc, unsigned* flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    atomicSub(&acc[0], v);
    atomicAnd(&acc[1], ~v);
    atomicXor(&acc[2], v);
    atomicAnd(&flags[0], ~(unsigned)(v * 3));
    atomicXor(&flags[1], 1u << (v & 31));
    atomicSub(&flags[2], 3u);
}
