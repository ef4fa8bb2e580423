// Mipmapped textures, explicit level of detail, gradients and gather (tests/ptx/test_mipmap.py):
// every fetch form nvcc emits for tex1DLod, tex2DLod, tex3DLod, tex2DLayeredLod,
// texCubemapLod, tex1DGrad, tex2DGrad, tex3DGrad, tex2DLayeredGrad, tex2D on a mipmapped
// texture and tex2Dgather, with coordinates read from arrays so tests choose them freely.
#include <cuda_runtime.h>

#define K (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void lod1d_f4(cudaTextureObject_t t, const float *x, const float *l,
                                    float4 *out, int n)
{
    if (K < n) out[K] = tex1DLod<float4>(t, x[K], l[K]);
}

extern "C" __global__ void lod2d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *l, float4 *out, int n)
{
    if (K < n) out[K] = tex2DLod<float4>(t, x[K], y[K], l[K]);
}

extern "C" __global__ void lod2d_i4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *l, int4 *out, int n)
{
    if (K < n) out[K] = tex2DLod<int4>(t, x[K], y[K], l[K]);
}

extern "C" __global__ void lod3d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *z, const float *l, float4 *out, int n)
{
    if (K < n) out[K] = tex3DLod<float4>(t, x[K], y[K], z[K], l[K]);
}

extern "C" __global__ void lod2dl_f4(cudaTextureObject_t t, const float *x, const float *y,
                                     const float *l, const int *layer, float4 *out, int n)
{
    if (K < n) out[K] = tex2DLayeredLod<float4>(t, x[K], y[K], layer[K], l[K]);
}

extern "C" __global__ void lodcube_f4(cudaTextureObject_t t, const float *x, const float *y,
                                      const float *z, const float *l, float4 *out, int n)
{
    if (K < n) out[K] = texCubemapLod<float4>(t, x[K], y[K], z[K], l[K]);
}

extern "C" __global__ void grad1d_f4(cudaTextureObject_t t, const float *x, const float *dx,
                                     const float *dy, float4 *out, int n)
{
    if (K < n) out[K] = tex1DGrad<float4>(t, x[K], dx[K], dy[K]);
}

extern "C" __global__ void grad2d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                     const float2 *dx, const float2 *dy, float4 *out, int n)
{
    if (K < n) out[K] = tex2DGrad<float4>(t, x[K], y[K], dx[K], dy[K]);
}

extern "C" __global__ void grad3d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                     const float *z, const float4 *dx, const float4 *dy,
                                     float4 *out, int n)
{
    if (K < n) out[K] = tex3DGrad<float4>(t, x[K], y[K], z[K], dx[K], dy[K]);
}

extern "C" __global__ void grad2dl_f4(cudaTextureObject_t t, const float *x, const float *y,
                                      const float2 *dx, const float2 *dy, const int *layer,
                                      float4 *out, int n)
{
    if (K < n) out[K] = tex2DLayeredGrad<float4>(t, x[K], y[K], layer[K], dx[K], dy[K]);
}

extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    float4 *out, int n)
{
    if (K < n) out[K] = tex2D<float4>(t, x[K], y[K]);
}

extern "C" __global__ void gather_f4(cudaTextureObject_t t, const float *x, const float *y,
                                     int comp, float4 *out, int n)
{
    if (K >= n) return;
    switch (comp) {
    case 0: out[K] = tex2Dgather<float4>(t, x[K], y[K], 0); break;
    case 1: out[K] = tex2Dgather<float4>(t, x[K], y[K], 1); break;
    case 2: out[K] = tex2Dgather<float4>(t, x[K], y[K], 2); break;
    default: out[K] = tex2Dgather<float4>(t, x[K], y[K], 3); break;
    }
}

extern "C" __global__ void gather_i4(cudaTextureObject_t t, const float *x, const float *y,
                                     int4 *out, int n)
{
    if (K < n) out[K] = tex2Dgather<int4>(t, x[K], y[K], 1);
}

extern "C" __global__ void gather_u4(cudaTextureObject_t t, const float *x, const float *y,
                                     uint4 *out, int n)
{
    if (K < n) out[K] = tex2Dgather<uint4>(t, x[K], y[K], 0);
}

extern "C" __global__ void gradcube_f4(cudaTextureObject_t t, const float *x, const float *y,
                                       const float *z, const float4 *dx, const float4 *dy,
                                       float4 *out, int n)
{
    if (K < n) out[K] = texCubemapGrad<float4>(t, x[K], y[K], z[K], dx[K], dy[K]);
}
