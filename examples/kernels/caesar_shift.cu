// Caesar cipher on an unsigned char string, in place: letters move k places, wrapping
// within their case; other bytes stay. Bytes of neighbouring lanes share no word here.
__global__ void caesar_shift(unsigned char* text, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned char c = text[i];
        if (c >= 'a' && c <= 'z') c = 'a' + (c - 'a' + k) % 26;
        else if (c >= 'A' && c <= 'Z') c = 'A' + (c - 'A' + k) % 26;
        text[i] = c;
    }
}
