// Texture objects (tests/ptx/test_texture.py): every fetch form nvcc emits for tex1Dfetch,
// tex1D and tex2D, with coordinates read from arrays so tests choose them freely.
#include <cuda_runtime.h>

extern "C" __global__ void fetch_f4(cudaTextureObject_t t, const int *i, float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex1Dfetch<float4>(t, i[k]);
}

extern "C" __global__ void fetch_i4(cudaTextureObject_t t, const int *i, int4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex1Dfetch<int4>(t, i[k]);
}

extern "C" __global__ void fetch_u4(cudaTextureObject_t t, const int *i, uint4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex1Dfetch<uint4>(t, i[k]);
}

extern "C" __global__ void tex1d_f4(cudaTextureObject_t t, const float *x, float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex1D<float4>(t, x[k]);
}

extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2D<float4>(t, x[k], y[k]);
}

extern "C" __global__ void tex2d_i4(cudaTextureObject_t t, const float *x, const float *y,
                                    int4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2D<int4>(t, x[k], y[k]);
}

extern "C" __global__ void tex2d_u4(cudaTextureObject_t t, const float *x, const float *y,
                                    uint4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2D<uint4>(t, x[k], y[k]);
}

// two texture objects, chosen per lane: lanes of one step present different handles
extern "C" __global__ void fetch_two(cudaTextureObject_t a, cudaTextureObject_t b, float *out,
                                    int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    cudaTextureObject_t t = (k & 1) ? b : a;
    if (k < n) out[k] = tex1Dfetch<float>(t, k >> 1);
}
