// A linked list pushed with atomicExch: each thread swaps itself in as the head and
// links to the head it replaced. Walking the list from the head then visits every
// thread once, whatever order the swaps ran in.
__global__ void atomic_exch_list(int* visits, int* stats) {
    __shared__ int head;
    __shared__ int next[12];
    int t = threadIdx.x;
    if (t == 0) head = -1;
    __syncthreads();
    next[t] = atomicExch(&head, t);
    __syncthreads();
    if (t == 0) {
        int count = 0, sum = 0;
        for (int k = head; k != -1; k = next[k]) {
            visits[k] += 1;
            count++;
            sum += k;
        }
        stats[0] = count;
        stats[1] = sum;
    }
}
