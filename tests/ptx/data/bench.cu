// Kernels for scripts/bench/compute.py (Gdev's MADD and LOOP micro-benchmarks).
extern "C" __global__ void madd(const unsigned *a, const unsigned *b, unsigned *c, unsigned n) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) c[i * n + j] = a[i * n + j] + b[i * n + j];
}

extern "C" __global__ void loop(unsigned *data, unsigned size, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= size) return;
    unsigned acc = 0;
    for (unsigned k = 0; k < n; k++) acc += i * k + (k ^ i);
    data[i] = acc;
}

extern "C" __global__ void fmad_loop(float *data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = (float)i * 1e-6f, y = 0.5f;
#pragma unroll 1
    for (unsigned k = 0; k < n; k++) { y = y * x + 0.25f; x = x * 0.999f + y; }
    data[i] = x + y;
}
