// Surface forms beyond 2D (tests/ptx/test_surface_forms.py): 3D with a vector of two
// 32-bit elements, 1D layered with 16-bit elements, cubemap faces, 64-bit elements under
// .zero, a byte-vector store, and lanes of one store on two surfaces.
#include <cuda_runtime.h>

// dst(x, y, z) = src(x, y, z) * 2 for float2 texels
extern "C" __global__ void scale3d(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < w) {
        float2 v = surf3Dread<float2>(src, x * 8, y, z);
        surf3Dwrite(make_float2(v.x * 2.0f, v.y * 2.0f), dst, x * 8, y, z);
    }
}

// layer l, element x = l * 100 + x, then read back the element to its right (clamped)
extern "C" __global__ void layers1d(cudaSurfaceObject_t s, short *out, int w)
{
    int x = threadIdx.x, l = blockIdx.x;
    if (x < w) {
        surf1DLayeredwrite<short>((short)(l * 100 + x), s, x * 2, l);
        __syncthreads();
        out[l * w + x] = surf1DLayeredread<short>(s, (x + 1) * 2, l, cudaBoundaryModeClamp);
    }
}

// face f of a cubemap of width w: f * 1000 + y * 10 + x
extern "C" __global__ void faces(cudaSurfaceObject_t s, int w)
{
    int x = threadIdx.x, y = threadIdx.y, f = blockIdx.x;
    if (x < w && y < w)
        surfCubemapwrite<int>(f * 1000 + y * 10 + x, s, x * 4, y, f);
}

// out[k] = the 64-bit element at byte (x[k], y[k]) or 0 outside; then -k stored there
// (dropped outside)
extern "C" __global__ void wide_zero(cudaSurfaceObject_t s, const int *x, const int *y,
                                     long long *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        out[k] = surf2Dread<long long>(s, x[k], y[k], cudaBoundaryModeZero);
        surf2Dwrite<long long>(-(long long)k, s, x[k], y[k], cudaBoundaryModeZero);
    }
}

// lane k stores 4 bytes k, k+1, k+2, k+3 at byte (x[k], y[k]) under .trap
extern "C" __global__ void bytes4(cudaSurfaceObject_t s, const int *x, const int *y, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        surf2Dwrite(make_uchar4(k, k + 1, k + 2, k + 3), s, x[k], y[k]);
}

// lanes below 16 store k at byte x[k] of surface b, the others of surface a (.trap)
extern "C" __global__ void pick(cudaSurfaceObject_t a, cudaSurfaceObject_t b, const int *x)
{
    int k = threadIdx.x;
    surf1Dwrite<int>(k, k < 16 ? b : a, x[k]);
}
