// Asynchronous global-to-shared copies as the sm_80 CUDA samples write them with the
// pipeline primitives (cp.async on sm_80, ordinary copies before): a GEMM whose next
// tiles load while the current ones are multiplied (double buffering), and a copy of
// 16-byte chunks whose last chunk is zero-filled past the end of the array.
#include <cuda_pipeline.h>

#define T 16

extern "C" __global__ void gemm_double_buffered(const float *A, const float *B, float *C, int n)
{
    __shared__ __align__(16) float As[2][T][T];
    __shared__ __align__(16) float Bs[2][T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    int tiles = n / T;
    __pipeline_memcpy_async(&As[0][ty][tx], &A[row * n + tx], sizeof(float));
    __pipeline_memcpy_async(&Bs[0][ty][tx], &B[ty * n + col], sizeof(float));
    __pipeline_commit();
    float acc = 0.0f;
    for (int t = 0; t < tiles; t++) {
        int cur = t & 1;
        if (t + 1 < tiles) {
            int nxt = cur ^ 1, k0 = (t + 1) * T;
            __pipeline_memcpy_async(&As[nxt][ty][tx], &A[row * n + k0 + tx], sizeof(float));
            __pipeline_memcpy_async(&Bs[nxt][ty][tx], &B[(k0 + ty) * n + col], sizeof(float));
            __pipeline_commit();
            __pipeline_wait_prior(1);
        } else {
            __pipeline_wait_prior(0);
        }
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc += As[cur][ty][k] * Bs[cur][k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

// Each thread stages four floats through shared memory; chunks past n are zero-filled.
extern "C" __global__ void staged_copy(const float4 *in, float *out, int n)
{
    __shared__ __align__(16) float4 stage[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int first = 4 * i;
    if (first < n) {
        int valid = min(4, n - first);
        __pipeline_memcpy_async(&stage[threadIdx.x], &in[i], sizeof(float4),
                                (4 - valid) * sizeof(float));
    } else {
        stage[threadIdx.x] = make_float4(-1.f, -1.f, -1.f, -1.f);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    float4 v = stage[blockDim.x - 1 - threadIdx.x];
    int j = blockIdx.x * blockDim.x + blockDim.x - 1 - threadIdx.x;
    out[4 * j] = v.x;
    out[4 * j + 1] = v.y;
    out[4 * j + 2] = v.z;
    out[4 * j + 3] = v.w;
}
