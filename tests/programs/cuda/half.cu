// Half precision as mixed-precision codes write it: __half2 arithmetic (add, mul, fma,
// comparisons, min/max), conversions, a half2 dot product reduced in float, and hsqrt/hexp.
#include <cuda_fp16.h>

extern "C" __global__ void half2_axpby(const __half2 *x, const __half2 *y, __half2 *out,
                                       float alpha, float beta, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 a = __float2half2_rn(alpha), b = __floats2half2_rn(beta, beta);
        __half2 r = __hfma2(a, x[i], __hmul2(b, y[i]));
        r = __hadd2(r, __hsub2(x[i], y[i]));
        out[i] = r;
    }
}

extern "C" __global__ void half2_dot(const __half2 *x, const __half2 *y, float *partial, int n2)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    if (i < n2) {
        __half2 p = __hmul2(x[i], y[i]);
        acc = __low2float(p) + __high2float(p);
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

extern "C" __global__ void half_ops(const __half *a, const __half *b, __half *out,
                                    unsigned int *flags, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half x = a[i], y = b[i];
    __half2 p = __halves2half2(x, y), q = __halves2half2(y, x);
    __half2 mx = __hmax2(p, q), mn = __hmin2(p, q);
    out[6 * i + 0] = __hadd(__low2half(mx), __high2half(mn));
    out[6 * i + 1] = __hmul(x, y);
    out[6 * i + 2] = __hdiv(x, __hadd(__habs(y), __float2half(1.0f)));
    out[6 * i + 3] = hsqrt(__habs(x));
    out[6 * i + 4] = __float2half_rz(__half2float(x) * 3.0f);
    out[6 * i + 5] = __hneg(__hfma(x, y, __int2half_rn(i)));
    flags[i] = __hlt(x, y) | (__hge(x, y) << 1) | (__hbgt2(p, q) << 2) | (__hisnan(x) << 3) |
               ((unsigned int)__half2int_rz(x) << 8);
}

// bfloat16 as mixed-precision training codes use it: fma of scalars and pairs (sm_80's
// fma.rn.bf16[x2]; integer emulation before), conversions both ways.
#include <cuda_bf16.h>

extern "C" __global__ void bf16_ops(const __nv_bfloat16 *a, const __nv_bfloat162 *b,
                                    __nv_bfloat16 *o, __nv_bfloat162 *o2, float *f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __nv_bfloat16 x = a[i];
    __nv_bfloat162 y = b[i];
#if __CUDA_ARCH__ >= 800
    o[i] = __hfma(x, x, __float2bfloat16(1.5f));
    o2[i] = __hfma2(y, y, __floats2bfloat162_rn(0.5f, -2.0f));
#else
    float fx = __bfloat162float(x);
    o[i] = __float2bfloat16(fx * fx + 1.5f);
    o2[i] = __floats2bfloat162_rn(__low2float(y) * __low2float(y) + 0.5f,
                                  __high2float(y) * __high2float(y) - 2.0f);
#endif
    f[i] = __bfloat162float(x) + __low2float(y) * __high2float(y);
}
