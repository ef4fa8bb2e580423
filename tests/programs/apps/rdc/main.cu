// Separate compilation (nvcc -rdc=true): the kernels of this unit call an extern __device__
// function (math.cu) and count into an extern __device__ variable (data.cu) that a kernel of
// data.cu reads; both units have a static __device__ function tag() of their own and use
// the template twice_of (rdc.h).
#include <cstdio>

#include "rdc.h"

extern __device__ float scale(float x);         // math.cu
extern __device__ int tally;                    // data.cu
extern __constant__ float factor;               // math.cu
__global__ void read_tally(int *out, int n);    // data.cu

static __device__ __noinline__ int tag(int x) { return x + 1000; }

__global__ void fill(float *o, int *tags, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        o[i] = scale((float)i);
        tags[i] = tag(i) + twice_of(0);
        atomicAdd(&tally, 1);
    }
}

#define CHECK(x) do { cudaError_t e_ = (x); if (e_) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main()
{
    const int n = 300;
    float *o, ho[n], f = 3.0f;
    int *tags, *got, ht[n], hg[n], t = 0;
    CHECK(cudaMalloc(&o, sizeof ho));
    CHECK(cudaMalloc(&tags, sizeof ht));
    CHECK(cudaMalloc(&got, sizeof hg));
    CHECK(cudaMemcpyToSymbol(factor, &f, sizeof f));
    CHECK(cudaMemcpyToSymbol(tally, &t, sizeof t));
    fill<<<(n + 127) / 128, 128>>>(o, tags, n);
    CHECK(cudaGetLastError());
    read_tally<<<(n + 127) / 128, 128>>>(got, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ht, tags, sizeof ht, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hg, got, sizeof hg, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyFromSymbol(&t, tally, sizeof t));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += ho[i] != 3.0f * i + 0.5f || ht[i] != i + 1000 || hg[i] != n + i + 2000;
    printf("tally=%d o[7]=%g tags[7]=%d got[7]=%d\n", t, ho[7], ht[7], hg[7]);
    printf(bad || t != n ? "rdc FAILED\n" : "rdc ok\n");
    return bad || t != n;
}
