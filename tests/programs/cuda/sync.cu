// Cross-block cooperation and the atomics around it, as the CUDA samples write it: the
// threadfence reduction (the last block, found by atomicInc, sums every block's result),
// a float maximum by an atomicCAS loop, atomicExch/atomicInc/atomicDec wrapping, a
// struct passed by value, 64-bit integer division and shuffles of doubles.

struct Params {
    int n;
    float scale;
    double offset;
    short shift;
    char tag;
};

__device__ unsigned int retired = 0;

extern "C" __global__ void fence_reduce(const float *in, volatile float *partial, float *total,
                                        struct Params p)
{
    __shared__ float s[128];
    __shared__ bool last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < p.n ? in[i] * p.scale : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned int ticket = atomicInc(&retired, gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        float t = 0.0f;
        for (int b = 0; b < gridDim.x; b++)
            t += partial[b];
        *total = t + (float)p.offset + p.shift + p.tag;
        retired = 0;
    }
}

__device__ float atomic_max_float(float *addr, float v)
{
    int *a = (int *)addr;
    int old = *a, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v)
            break;
        old = atomicCAS(a, assumed, __float_as_int(v));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void atomics_mix(const float *in, float *fmax, unsigned int *ring,
                                       unsigned int *dec, int *slots, unsigned long long *cas64,
                                       int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomic_max_float(fmax, in[i]);
    atomicInc(ring, 9u);             // wraps to 0 after 9
    atomicDec(dec, 1000u);
    atomicExch(&slots[i % 5], i % 5);
    unsigned long long old = *cas64, seen;
    do {
        seen = old;
        old = atomicCAS(cas64, seen, seen + (unsigned long long)i);
    } while (old != seen);
}

extern "C" __global__ void int64_div(const long long *a, const long long *b,
                                     unsigned long long *ua, long long *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[4 * i] = a[i] / b[i];
        out[4 * i + 1] = a[i] % b[i];
        out[4 * i + 2] = (long long)(ua[i] / (unsigned long long)(b[i] | 1));
        out[4 * i + 3] = (long long)(ua[i] % 1000000007ull) + a[i] / 3;
    }
}

extern "C" __global__ void shuffle_double(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? in[i] : 0.0;
    double sum = v;
    for (int off = 16; off > 0; off >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, off);
    long long bits = __double_as_longlong(v);
    long long up = __shfl_up_sync(0xffffffffu, bits, 3);
    if (i < n) {
        out[2 * i] = sum;
        out[2 * i + 1] = __longlong_as_double(up);
    }
}
