// 3D, layered and cubemap textures and surfaces (tests/ptx/test_tex3d.py): every fetch form
// nvcc emits for tex3D, tex1DLayered, tex2DLayered, texCubemap, texCubemapLayered and the
// 3D/layered surface accesses, with coordinates read from arrays so tests choose them freely.
#include <cuda_runtime.h>

#define K (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void tex3d_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *z, float4 *out, int n)
{
    if (K < n) out[K] = tex3D<float4>(t, x[K], y[K], z[K]);
}

extern "C" __global__ void tex3d_i4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *z, int4 *out, int n)
{
    if (K < n) out[K] = tex3D<int4>(t, x[K], y[K], z[K]);
}

extern "C" __global__ void tex1dl_f4(cudaTextureObject_t t, const float *x, const int *l,
                                     float4 *out, int n)
{
    if (K < n) out[K] = tex1DLayered<float4>(t, x[K], l[K]);
}

extern "C" __global__ void tex2dl_f4(cudaTextureObject_t t, const float *x, const float *y,
                                     const int *l, float4 *out, int n)
{
    if (K < n) out[K] = tex2DLayered<float4>(t, x[K], y[K], l[K]);
}

extern "C" __global__ void tex2dl_u4(cudaTextureObject_t t, const float *x, const float *y,
                                     const int *l, uint4 *out, int n)
{
    if (K < n) out[K] = tex2DLayered<uint4>(t, x[K], y[K], l[K]);
}

extern "C" __global__ void cube_f4(cudaTextureObject_t t, const float *x, const float *y,
                                   const float *z, float4 *out, int n)
{
    if (K < n) out[K] = texCubemap<float4>(t, x[K], y[K], z[K]);
}

extern "C" __global__ void cubel_f4(cudaTextureObject_t t, const float *x, const float *y,
                                    const float *z, const int *l, float4 *out, int n)
{
    if (K < n) out[K] = texCubemapLayered<float4>(t, x[K], y[K], z[K], l[K]);
}

// each thread: v = read(x, y, z); write(2 v + 1) at the same place
extern "C" __global__ void surf3d_add(cudaSurfaceObject_t s, int w, int h, int d)
{
    int x = K % w, y = K / w % h, z = K / (w * h);
    if (K < w * h * d) {
        float v = surf3Dread<float>(s, x * 4, y, z);
        surf3Dwrite(2.0f * v + 1.0f, s, x * 4, y, z);
    }
}

extern "C" __global__ void surf2dl_add(cudaSurfaceObject_t s, int w, int h, int layers)
{
    int x = K % w, y = K / w % h, l = K / (w * h);
    if (K < w * h * layers) {
        float v = surf2DLayeredread<float>(s, x * 4, y, l);
        surf2DLayeredwrite(2.0f * v + 1.0f, s, x * 4, y, l);
    }
}

extern "C" __global__ void surf1dl_add(cudaSurfaceObject_t s, int w, int layers)
{
    int x = K % w, l = K / w;
    if (K < w * layers) {
        float v = surf1DLayeredread<float>(s, x * 4, l);
        surf1DLayeredwrite(2.0f * v + 1.0f, s, x * 4, l);
    }
}

// one access per thread at (x, y, z) of the arrays, out of range as boundary mode says
extern "C" __global__ void surf3d_read_zero(cudaSurfaceObject_t s, const int *x, const int *y,
                                            const int *z, float *out, int n)
{
    if (K < n) out[K] = surf3Dread<float>(s, x[K] * 4, y[K], z[K], cudaBoundaryModeZero);
}

extern "C" __global__ void surf3d_read_clamp(cudaSurfaceObject_t s, const int *x, const int *y,
                                             const int *z, float *out, int n)
{
    if (K < n) out[K] = surf3Dread<float>(s, x[K] * 4, y[K], z[K], cudaBoundaryModeClamp);
}

extern "C" __global__ void surf3d_read_trap(cudaSurfaceObject_t s, const int *x, const int *y,
                                            const int *z, float *out, int n)
{
    if (K < n) out[K] = surf3Dread<float>(s, x[K] * 4, y[K], z[K]);
}
