// Surface objects (tests/ptx/test_surface.py): surf2Dread/surf2Dwrite in each boundary mode
// (trap, clamp, zero), element and vector forms, and a 1D surface.
#include <cuda_runtime.h>

// out[k] = surface at byte (x[k], y[k]) with the mode's boundary; then the surface at
// (x[k], y[k]) = k + 0.5 where in range (trap and zero) or nearest (clamp)
extern "C" __global__ void rw_trap(cudaSurfaceObject_t s, const int *x, const int *y, float *out,
                                   int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        out[k] = surf2Dread<float>(s, x[k], y[k], cudaBoundaryModeTrap);
        surf2Dwrite(k + 0.5f, s, x[k], y[k], cudaBoundaryModeTrap);
    }
}

extern "C" __global__ void rw_clamp(cudaSurfaceObject_t s, const int *x, const int *y,
                                    float *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        out[k] = surf2Dread<float>(s, x[k], y[k], cudaBoundaryModeClamp);
        surf2Dwrite(k + 0.5f, s, x[k], y[k], cudaBoundaryModeClamp);
    }
}

extern "C" __global__ void rw_zero(cudaSurfaceObject_t s, const int *x, const int *y,
                                   float *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        out[k] = surf2Dread<float>(s, x[k], y[k], cudaBoundaryModeZero);
        surf2Dwrite(k + 0.5f, s, x[k], y[k], cudaBoundaryModeZero);
    }
}

// uchar4 texels: read, invert, write back (an image filter's in-place pass)
extern "C" __global__ void invert4(cudaSurfaceObject_t s, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) {
        uchar4 v = surf2Dread<uchar4>(s, x * 4, y);
        surf2Dwrite(make_uchar4(255 - v.x, 255 - v.y, 255 - v.z, v.w), s, x * 4, y);
    }
}

extern "C" __global__ void write1d(cudaSurfaceObject_t s, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) surf1Dwrite(k * 3, s, k * 4);
}
