// Every thread of a 3-D grid of 3-D blocks writes its own coordinates, packed as decimal
// digits (threadIdx.x, .y, .z, blockIdx.x, .y, .z), at its global linear index; thread 0
// of block 0 also writes blockDim and gridDim.
__global__ void index_3d(int* ids, int* dims) {
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int threads = blockDim.x * blockDim.y * blockDim.z;
    ids[b * threads + t] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z
                         + 1000 * blockIdx.x + 10000 * blockIdx.y + 100000 * blockIdx.z;
    if (t == 0 && b == 0) {
        dims[0] = blockDim.x; dims[1] = blockDim.y; dims[2] = blockDim.z;
        dims[3] = gridDim.x;  dims[4] = gridDim.y;  dims[5] = gridDim.z;
    }
}
