// atomicAdd returns the old value: the olds are a permutation of 0..15, so their sum
// is 120 and exactly one thread sees 15, whatever the order.
__global__ void atomic_old_sum(int* ctr) {
    int old = atomicAdd(&ctr[0], 1);
    atomicAdd(&ctr[1], old);
    if (old == 15) ctr[2] = 1;
    if (old == 0) atomicAdd(&ctr[3], 5);
}
