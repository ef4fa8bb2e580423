// Survey corpus: byte/half-word SIMD intrinsics, dot products, bit fields, byte swaps,
// saturating and mixed-width integer arithmetic.
struct packed { unsigned a : 3, b : 7, c : 13, d : 9; };

extern "C" __global__ void simd_bits(const unsigned int *x, const unsigned int *y,
                                     const struct packed *p, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int a = x[i], b = y[i];
    unsigned int r = __vadd4(a, b) ^ __vsub2(a, b) ^ __vabsdiffu4(a, b) ^ __vcmpeq2(a, b);
    r += __vmaxs4(a, b) + __vminu2(a, b) + __vavgu4(a, b) + __vsetgtu4(a, b) + __vneg2(a);
    r += __dp4a((int)a, (int)b, 7) + __dp4a(a, b, 9u) + __dp2a_lo((int)a, (int)b, 3);
    struct packed q = p[i];
    q.b += q.a;
    q.d ^= q.c;
    r += q.a + q.b + q.c + q.d + ((a >> 5) & 0x3ff) + ((int)a << 7 >> 20);
    r += __byte_perm(a, b, 0x0123) + __nv_bswap32(b) + (unsigned int)__nv_bswap64(a);
    r += __fns(a, 0, 3) + __hadd((int)a, 1);
    r += (unsigned short)a * (unsigned short)b + (signed char)a * (short)b;
    unsigned long long wide = (unsigned long long)a * b + __umul64hi(a, b);
    r += (unsigned int)(wide >> 7) + (unsigned int)__sad(a, b, 0);
    out[i] = r;
}
