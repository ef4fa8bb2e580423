// Device malloc/free (the device heap): per-thread buffers, memory that outlives its kernel,
// exhaustion, malloc(0), __nv_aligned_device_malloc, new/delete, and frees of addresses
// malloc never returned.  Results are independent of the addresses handed out (which depend
// on the order blocks run in), so both engines must agree on every one.
#include <cstdint>

extern "C" __global__ void per_thread(int *sums, int *aligned, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int *p = (int *)malloc(n * sizeof(int));
    aligned[t] = p != 0 && ((uintptr_t)p & 15) == 0;
    if (!p)
        return;
    for (int k = 0; k < n; k++)
        p[k] = t * 1000 + k;
    int s = 0;
    for (int k = 0; k < n; k++)
        s += p[k];
    sums[t] = s;
    free(p);
}

// each thread keeps a buffer of n ints in slots[t], filled with t + k
extern "C" __global__ void keep(int **slots, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int *p = (int *)malloc(n * sizeof(int));
    if (p)
        for (int k = 0; k < n; k++)
            p[k] = t + k;
    slots[t] = p;
}

// a later kernel sums and frees them
extern "C" __global__ void use_and_free(int **slots, int *sums, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int *p = slots[t];
    int s = -1;
    if (p) {
        s = 0;
        for (int k = 0; k < n; k++)
            s += p[k];
    }
    sums[t] = s;
    free(p);
}

extern "C" __global__ void exhaust(int *got, unsigned long long size)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    got[t] = malloc(size) != 0;
}

extern "C" __global__ void zero_and_null(int *out)
{
    void *p = malloc(0);
    out[threadIdx.x] = p == 0;
    free(0);
}

extern "C" __global__ void aligned(int *out, unsigned long long align)
{
    int t = threadIdx.x;
    char *p = (char *)__nv_aligned_device_malloc(100 + t, align);
    out[t] = p == 0 ? -1 : (int)(((uintptr_t)p & (align - 1)) == 0);
    if (p) {
        p[99 + t] = 1;
        free(p);
    }
}

extern "C" __global__ void free_at(char *p, long long offset)
{
    free(p + offset);
}

extern "C" __global__ void malloc_free_twice(int *out)
{
    char *p = (char *)malloc(64);
    out[0] = p != 0;
    free(p);
    free(p);
}

struct Particle {
    float x, v;
    int id;
};

extern "C" __global__ void new_delete(float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    Particle *ps = new Particle[n];
    for (int k = 0; k < n; k++)
        ps[k] = Particle{(float)k, 0.5f * t, k};
    float s = 0;
    for (int k = 0; k < n; k++)
        s += ps[k].x + ps[k].v + ps[k].id;
    out[t] = s;
    delete[] ps;
}

// rounds of malloc and free per thread (scripts/bench/heap.py times it)
extern "C" __global__ void churn(int *got, int rounds, unsigned long long size)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int ok = 0;
    for (int r = 0; r < rounds; r++) {
        void *p = malloc(size);
        ok += p != 0;
        free(p);
    }
    got[t] = ok;
}
