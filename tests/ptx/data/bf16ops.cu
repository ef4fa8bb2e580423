// bf16 arithmetic as nvcc emits it for __nv_bfloat16 operators: bf16ops.ptx with -arch=sm_80
// (min/max.bf16[x2], the rest as fma.rn.bf16), bf16ops.sm90.ptx with -arch=sm_90 (add, sub,
// mul, neg, abs, min, max, setp and set on .bf16 and .bf16x2).  gdevd/gpu/ptx/bf16arith.py.
#include <cuda_bf16.h>

extern "C" __global__ void bf16ops(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                   __nv_bfloat16 *out, int *flags, const __nv_bfloat162 *v,
                                   __nv_bfloat162 *w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __nv_bfloat16 x = a[i], y = b[i];
    out[i] = x + y;
    out[n + i] = x - y;
    out[2 * n + i] = x * y;
    out[3 * n + i] = __hmax(x, y);
    out[4 * n + i] = __hmin(x, y);
    out[5 * n + i] = __hneg(x);
    out[6 * n + i] = __habs(y);
    flags[i] = (x < y) | ((x == y) << 1) | ((x >= y) << 2) | (__hisnan(x) << 3);
    w[i] = v[i] * v[n + i] + v[i];
    w[n + i] = __hmax2(v[i], v[n + i]);
    w[2 * n + i] = __hmin2(v[i], v[n + i]);
}
