// nvcc -ptx -arch=compute_75 -G (unoptimized, debug): basic.debug.ptx / exec.debug.ptx are built from these sources too.
// Small kernels exercising what nvcc emits for ordinary CUDA code.
#include <cstdint>

extern "C" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void reduce_sum(const float *in, float *out, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void histogram(const unsigned char *data, unsigned *bins, int n) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__device__ __noinline__ int collatz_steps(long long v) {
    int s = 0;
    while (v != 1) { v = (v & 1) ? 3 * v + 1 : v / 2; ++s; }
    return s;
}

extern "C" __global__ void collatz(const int *start, int *steps, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    steps[i] = collatz_steps(start[i]);
}

extern "C" __global__ void warp_sum(const int *in, int *out, unsigned *ballots) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    unsigned b = __ballot_sync(0xffffffffu, v & 1);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) { out[i / 32] = v; ballots[i / 32] = b; }
}

extern "C" __global__ void transpose2d(const double *in, double *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[x * h + y] = in[y * w + x] * 2.0 + threadIdx.z;
}

extern "C" __global__ void local_sort(const int *in, int *out) {
    int a[8];
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    for (int k = 0; k < 8; ++k) a[k] = in[base + k];
    for (int k = 1; k < 8; ++k) {
        int v = a[k], j = k - 1;
        while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; --j; }
        a[j + 1] = v;
    }
    for (int k = 0; k < 8; ++k) out[base + k] = a[k];
}

extern "C" __global__ void int_mix(const int *a, const int *b, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    int q = y != 0 ? x / y : 0, r = y != 0 ? x % y : 0;
    unsigned ux = x, uy = y;
    out[i * 8 + 0] = q;
    out[i * 8 + 1] = r;
    out[i * 8 + 2] = __popc(ux) + __clz(ux) * 100;
    out[i * 8 + 3] = __brev(ux) ^ (ux >> (uy & 31));
    out[i * 8 + 4] = __mulhi(x, y);
    out[i * 8 + 5] = min(x, y) - max(x, y) + abs(x);
    out[i * 8 + 6] = (int)(((long long)x * y) >> 7);
    out[i * 8 + 7] = (ux << 3 | ux >> 29) + __byte_perm(ux, uy, 0x5140);
}

extern "C" __global__ void float_mix(const float *a, const float *b, float *out, int *iout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    out[i * 6 + 0] = sqrtf(fabsf(x)) + y / (x + 3.0f);
    out[i * 6 + 1] = fminf(x, y) * fmaxf(x, y);
    out[i * 6 + 2] = floorf(x) + ceilf(y) + truncf(x * y) + rintf(y);
    out[i * 6 + 3] = (double)x * (double)y;
    out[i * 6 + 4] = x > y ? x : -y;
    out[i * 6 + 5] = fmaf(x, y, 1.5f);
    iout[i * 2 + 0] = (int)(x * 1000.0f);
    iout[i * 2 + 1] = (unsigned)(fabsf(y) * 1e9f);
}
