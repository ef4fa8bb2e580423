// Kernels for the executor's semantics: divergence, barriers, memory spaces, atomics, warps.
#include <cstdio>
#include <cassert>

__constant__ float coeffs[4] = {0.5f, -1.0f, 2.0f, 0.25f};
__device__ int counter = 7;
__device__ unsigned long long table[3] = {1ull, 2ull, 0xFFFFFFFFFFFFFFFFull};

struct Pair { int a; float b; double c; };

extern "C" __global__ void nested(const int *trip, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = trip[i];
    if (t < 0) return;                       // early exit for some threads
    int acc = 0;
    for (int a = 0; a < t; ++a) {
        for (int b = 0; b <= a; ++b) {
            if ((a + b) % 3 == 0) continue;
            acc += a * b + 1;
            if (acc > 100000) break;
        }
    }
    out[i] = acc;
}

extern "C" __global__ void dyn_reduce(const int *in, int *out) {
    extern __shared__ int buf[];
    int t = threadIdx.x;
    buf[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}

__device__ __noinline__ void bump(int *p, int v) { *p += v; }   // generic pointer

extern "C" __global__ void generic_ptrs(int *out, int which) {
    __shared__ int sh[64];
    int loc[4];
    int t = threadIdx.x;
    sh[t] = t;
    for (int k = 0; k < 4; ++k) loc[k] = k * t;
    __syncthreads();
    int *p = which == 0 ? &sh[63 - t] : which == 1 ? &loc[t & 3] : &out[t];
    bump(p, 1000);
    __syncthreads();
    out[64 + t] = which == 0 ? sh[t] : which == 1 ? loc[t & 3] : 0;
}

extern "C" __global__ void atomics(int *i32, unsigned *u32, unsigned long long *u64,
                                   float *f32, double *f64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&i32[0], i);
    atomicMin(&i32[1], -i);
    atomicMax(&i32[2], i);
    atomicAnd(&u32[0], ~(1u << (i % 32)));
    atomicOr(&u32[1], 1u << (i % 32));
    atomicXor(&u32[2], (unsigned)i);
    atomicInc(&u32[3], 16u);
    atomicDec(&u32[4], 16u);
    atomicExch(&u32[5], 42u);
    atomicAdd(&u64[0], (unsigned long long)i << 32);
    atomicMax(&u64[1], (unsigned long long)i * 3);
    atomicCAS(&u64[2], 0ull, (unsigned long long)i + 1);
    atomicAdd(&f32[0], 0.5f);
    atomicAdd(&f64[0], 0.25);
    // float max through a CAS loop
    float v = (float)(i % 97);
    int *addr = (int *)&f32[1];
    int old = *addr, assumed;
    do {
        assumed = old;
        old = atomicCAS(addr, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
    } while (assumed != old);
}

extern "C" __global__ void warps(const int *in, int *out, int width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int r0 = __shfl_sync(0xffffffffu, v, 3, width);
    int r1 = __shfl_up_sync(0xffffffffu, v, 2, width);
    int r2 = __shfl_down_sync(0xffffffffu, v, 5, width);
    int r3 = __shfl_xor_sync(0xffffffffu, v, 6, width);
    int any = __any_sync(0xffffffffu, v > 900);
    int all = __all_sync(0xffffffffu, v >= 0);
    int cnt = __syncthreads_count(v & 1);
    int band = __syncthreads_and(v < 1000);
    int bor = __syncthreads_or(v == 0);
    out[i * 8 + 0] = r0; out[i * 8 + 1] = r1; out[i * 8 + 2] = r2; out[i * 8 + 3] = r3;
    out[i * 8 + 4] = any; out[i * 8 + 5] = all; out[i * 8 + 6] = cnt;
    out[i * 8 + 7] = band * 2 + bor;
}

extern "C" __global__ void globals_and_params(Pair p, float *out, unsigned long long *tab) {
    int i = threadIdx.x;
    out[i] = coeffs[i & 3] * p.b + p.a + (float)p.c + counter;
    if (i == 0) { counter += 1; tab[0] = table[2] - table[1]; }
}

extern "C" __global__ void grid3d(int *out) {
    int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int g = bx * blockDim.x * blockDim.y * blockDim.z + tx;
    out[g] = (threadIdx.x << 24) | (threadIdx.y << 16) | (threadIdx.z << 12) |
             (blockIdx.x << 8) | (blockIdx.y << 4) | blockIdx.z;
}

extern "C" __global__ void faulty(int *p, long long off) {
    p[threadIdx.x + off] = 1;
}

extern "C" __global__ void checked(const int *in, int *out) {
    int i = threadIdx.x;
    assert(in[i] >= 0);
    out[i] = in[i];
    if (in[i] == 12345) printf("thread %d saw %d\n", i, in[i]);
}

extern "C" __global__ void spin(int *out, long long n) {
    long long s = 0;
    for (long long k = 0; k < n; ++k) s += k ^ threadIdx.x;
    out[threadIdx.x] = (int)s;
}

extern "C" __global__ void clocks(long long *out) {
    long long a = clock64();
    int x = 0;
    for (int k = 0; k < 100; ++k) x += k * threadIdx.x;
    long long b = clock64();
    out[threadIdx.x * 2] = b - a;
    out[threadIdx.x * 2 + 1] = x;
}
