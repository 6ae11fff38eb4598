// splitmix64 (Steele, Lea, Flood): a 64-bit hash of seed + (i + 1) * golden ratio, with
// 64-bit multiplies, right shifts and xors; each thread writes its hash's two words.
__global__ void hash64_mix(const unsigned *key, unsigned *out, unsigned seed) {
    int i = threadIdx.x;
    unsigned long long z = ((unsigned long long)seed << 32 | key[i]) + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    out[2 * i] = (unsigned)z;
    out[2 * i + 1] = (unsigned)(z >> 32);
}
