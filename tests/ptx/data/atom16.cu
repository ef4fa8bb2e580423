// 16-bit atomics (gdevd/gpu/ptx/atom16.py): __half, __half2 and __nv_bfloat16 atomicAdd and a
// 16-bit atomicCAS loop, on the two halves of one 32-bit word from every thread.
// atom16.ptx: nvcc -arch=sm_75 (bf16 atomicAdd is nvcc's own cas.b16 loop there);
// atom16.sm90.ptx: -arch=sm_90 (atom.add.noftz.bf16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void atoms(__half *h, __half2 *h2, __nv_bfloat16 *b, unsigned short *u,
                                 __half *old)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    old[t] = atomicAdd(&h[t % 2], __float2half(1.0f));
    atomicAdd(h2, __floats2half2_rn(1.0f, 0.5f));
    atomicAdd(&b[t % 2], __float2bfloat16(1.0f));
    unsigned short seen = u[t % 2], want;
    do {
        want = seen;
        seen = atomicCAS(&u[t % 2], want, (unsigned short)(want + 1));
    } while (seen != want);
}
