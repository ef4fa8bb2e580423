// Survey corpus: half precision (cuda_fp16.h), scalar and half2.
#include <cuda_fp16.h>

extern "C" __global__ void half_math(const __half *a, const __half2 *b, __half *out,
                                     __half2 *out2, float *of, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half x = a[i];
    __half2 y = b[i];
    __half r = __hadd(x, x);
    r = __hmul(r, x);
    r = __hfma(r, x, __float2half(1.5f));
    r = __hsub(r, __hdiv(x, __float2half(3.0f)));
    r = __hlt(r, x) ? __hneg(r) : hsqrt(__habs(r));
    out[i] = r;
    __half2 z = __hadd2(y, y);
    z = __hmul2(z, y);
    z = __hfma2(z, y, __floats2half2_rn(1.0f, 2.0f));
    z = __hmax2(z, y);
    out2[i] = z;
    of[i] = __half2float(r) + __low2float(z) + __high2float(z) + __half2float(__float2half_rz(1.1f));
}
