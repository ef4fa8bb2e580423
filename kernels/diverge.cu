// Kernels that diverge within a warp and call device functions (inlined and __noinline__),
// the control flow real suites make the engine handle: data-dependent loops, early exits,
// switch tables, nested branches, local arrays. Launch: 1-D, any geometry covering n.

// Number of Collatz steps from x to 1 (x >= 1), capped at limit; not inlined: a real call.
__device__ __noinline__ unsigned int collatz_steps(unsigned long long x, unsigned int limit)
{
    unsigned int steps = 0;
    while (x != 1 && steps < limit) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        steps++;
    }
    return steps;
}

// out[i] = collatz_steps(in[i], limit) for in[i] >= 1; out[i] = 0xffffffff for in[i] == 0.
extern "C" __global__ void collatz(const unsigned int *in, unsigned int *out, unsigned int n,
                                  unsigned int limit)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int x = in[i];
    if (x == 0) {
        out[i] = 0xffffffffu;
        return;
    }
    out[i] = collatz_steps(x, limit);
}

// A by-value struct parameter and a small device function returning through a pointer.
struct affine { int mul; int add; int shift; };

__device__ __noinline__ void apply_affine(const struct affine *f, int x, int *y)
{
    *y = (x * f->mul + f->add) >> f->shift;
}

__device__ int classify(int x)
{
    if (x < 0)
        return x < -1000 ? 0 : 1;
    if (x == 0)
        return 2;
    return (x & 1) ? 3 : 4;
}

// out[i] depends on classify(in[i]) through a switch:
//   0: in/7 (C truncating division)   1: -in % 13 (C remainder)   2: f applied to i
//   3: popcount(in) * 100 + clz(in)   4: f applied to in
extern "C" __global__ void branchy(const int *in, int *out, unsigned int n, struct affine f)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = in[i], y;
    switch (classify(x)) {
    case 0:
        y = x / 7;
        break;
    case 1:
        y = -x % 13;
        break;
    case 2:
        apply_affine(&f, (int)i, &y);
        break;
    case 3:
        y = __popc(x) * 100 + __clz(x);
        break;
    default:
        apply_affine(&f, x, &y);
        break;
    }
    out[i] = y;
}

// A local (stack) array indexed by data. With d_0 (least significant) .. d_{c-1} the digits of
// in[i] in base `base` (2..16; 0 has the one digit 0): out[i] = sum of d_k * 16^(c-1-k)
// modulo 2^32, i.e. the digits reversed, one per hex nibble.
extern "C" __global__ void reverse_digits(const unsigned int *in, unsigned int *out,
                                          unsigned int n, unsigned int base)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int digits[32];
    unsigned int x = in[i], count = 0;
    do {
        digits[count++] = x % base;
        x /= base;
    } while (x != 0);
    unsigned int packed = 0;
    for (unsigned int k = 0; k < count; k++)
        packed = (packed << 4) | digits[k];
    out[i] = packed;
}
