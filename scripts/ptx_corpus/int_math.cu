// Survey corpus: integer arithmetic of every width and signedness, templates, bit intrinsics.
#include <cstdint>

template <typename T>
__device__ __noinline__ T int_ops(T a, T b)
{
    T r = a + b;
    r ^= a - b;
    r += a * b;
    if (b != 0) {
        r += a / b;
        r ^= a % b;
    }
    r += (a >> (b & 7)) ^ (a << (b & 7));
    r += min(a, b) - max(a, b);
    r += (a < b) ? (T)1 : (T)2;
    r |= (a == b);
    r &= ~b | (T)0x5a;
    return r;
}

template <typename T>
__global__ void int_kernel(const T *a, const T *b, T *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = int_ops<T>(a[i], b[i]);
}

template __global__ void int_kernel<int8_t>(const int8_t *, const int8_t *, int8_t *, int);
template __global__ void int_kernel<uint8_t>(const uint8_t *, const uint8_t *, uint8_t *, int);
template __global__ void int_kernel<int16_t>(const int16_t *, const int16_t *, int16_t *, int);
template __global__ void int_kernel<uint16_t>(const uint16_t *, const uint16_t *, uint16_t *, int);
template __global__ void int_kernel<int32_t>(const int32_t *, const int32_t *, int32_t *, int);
template __global__ void int_kernel<uint32_t>(const uint32_t *, const uint32_t *, uint32_t *, int);
template __global__ void int_kernel<int64_t>(const int64_t *, const int64_t *, int64_t *, int);
template __global__ void int_kernel<uint64_t>(const uint64_t *, const uint64_t *, uint64_t *, int);

extern "C" __global__ void bit_intrinsics(const unsigned int *a, const unsigned long long *b,
                                          unsigned int *o32, unsigned long long *o64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int x = a[i];
    unsigned long long y = b[i];
    o32[8 * i + 0] = __popc(x) + __clz(x) + __ffs(x);
    o32[8 * i + 1] = __popcll(y) + __clzll(y) + __ffsll(y);
    o32[8 * i + 2] = __brev(x);
    o32[8 * i + 3] = __byte_perm(x, (unsigned int)y, 0x5410) ^ __byte_perm(x, 0, 0x3210);
    o32[8 * i + 4] = __funnelshift_l(x, (unsigned int)y, x & 31) + __funnelshift_lc(x, 1u, x);
    o32[8 * i + 5] = __funnelshift_r(x, (unsigned int)y, x) + __funnelshift_rc(x, 1u, x);
    o32[8 * i + 6] = __umulhi(x, (unsigned int)y) + __mulhi((int)x, (int)y) +
                     __umul24(x, (unsigned int)y) + __mul24((int)x, (int)y);
    o32[8 * i + 7] = __sad((int)x, (int)y, 3u) + __usad(x, (unsigned int)y, 5u) +
                     __hadd((int)x, (int)y) + __rhadd((int)x, (int)y) + __uhadd(x, 7u) +
                     __urhadd(x, 9u) + abs((int)x);
    o64[4 * i + 0] = __brevll(y);
    o64[4 * i + 1] = __umul64hi(y, x) + __mul64hi((long long)y, -(long long)x);
    o64[4 * i + 2] = (unsigned long long)llabs((long long)y) + llmin((long long)y, 5) +
                     ullmax(y, 77ull);
    o64[4 * i + 3] = (unsigned long long)(int)(short)x + (unsigned long long)(signed char)x +
                     ((unsigned long long)x << 40) + (y >> (x & 63)) + ((long long)y >> (x & 63));
}

extern "C" __global__ void div_by_variable(const int *a, const int *b, const long long *c,
                                           const unsigned long long *d, long long *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long r = 0;
    if (b[i] != 0)
        r += a[i] / b[i] + a[i] % b[i] + (unsigned)a[i] / (unsigned)b[i] +
             (unsigned)a[i] % (unsigned)b[i];
    if (c[i] != 0)
        r += c[i * 2] / c[i] + c[i * 2] % c[i];
    if (d[i] != 0)
        r += (long long)(d[i * 2] / d[i] + d[i * 2] % d[i]);
    r += a[i] / 3 + a[i] % 10 + (unsigned)a[i] / 7u + c[i] / 1000;
    out[i] = r;
}
