// A grid reduction in the style of the CUDA samples' reductionMultiBlockCG, and a Jacobi
// relaxation with grid barriers in its loop: cooperative launches as applications write them
// (cudaLaunchCooperativeKernel sized by cudaOccupancyMaxActiveBlocksPerMultiprocessor and
// multiProcessorCount; cudaLaunchKernelEx with cudaLaunchAttributeCooperative).  The
// program checks its own results and prints "<name> ok" for each part.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// each block sums a grid-stride share into shared memory and writes its partial; after the
// grid barrier block 0 sums the partials (the sample's two phases in one kernel)
__global__ void reduce_cg(const float *in, double *partial, double *out, unsigned n)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    extern __shared__ double sdata[];
    double sum = 0;
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size())
        sum += in[i];
    sdata[block.thread_rank()] = sum;
    block.sync();
    for (unsigned s = block.size() / 2; s > 0; s >>= 1) {
        if (block.thread_rank() < s)
            sdata[block.thread_rank()] += sdata[block.thread_rank() + s];
        block.sync();
    }
    if (block.thread_rank() == 0)
        partial[blockIdx.x] = sdata[0];
    grid.sync();
    if (blockIdx.x == 0) {
        double t = 0;
        for (unsigned b = block.thread_rank(); b < gridDim.x; b += block.size())
            t += partial[b];
        sdata[block.thread_rank()] = t;
        block.sync();
        if (block.thread_rank() == 0) {
            double total = 0;
            for (unsigned k = 0; k < block.size(); k++)
                total += sdata[k];
            *out = total;
        }
    }
}

// iters sweeps of x[i] = (x[i-1] + x[i+1]) / 2 (ends fixed), two grid barriers a sweep
__global__ void jacobi(int *x, int *y, unsigned n, int iters)
{
    cg::grid_group grid = cg::this_grid();
    for (int it = 0; it < iters; it++) {
        for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size())
            y[i] = (i == 0 || i == n - 1) ? x[i] : (x[i - 1] + x[i + 1]) / 2;
        grid.sync();
        for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size())
            x[i] = y[i];
        grid.sync();
    }
}

static int reduction(void)
{
    int dev = 0, per_sm = 0, coop = 0, threads = 256;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop || !prop.cooperativeLaunch) {
        printf("no cooperative launch: attribute %d, property %d\n", coop, prop.cooperativeLaunch);
        return 1;
    }
    size_t smem = threads * sizeof(double);
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_cg, threads, smem));
    int blocks = per_sm * prop.multiProcessorCount;
    unsigned n = 1u << 20;
    std::vector<float> h(n);
    double want = 0;
    for (unsigned i = 0; i < n; i++) {
        h[i] = (float)(i % 97);
        want += h[i];
    }
    float *in;
    double *partial, *out, got = 0;
    CK(cudaMalloc(&in, n * sizeof(float)));
    CK(cudaMalloc(&partial, blocks * sizeof(double)));
    CK(cudaMalloc(&out, sizeof(double)));
    CK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    void *args[] = {&in, &partial, &out, &n};
    CK(cudaLaunchCooperativeKernel((void *)reduce_cg, blocks, threads, args, smem, 0));
    CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    // one block more than fit at once: refused, and the error is not sticky
    cudaError_t e = cudaLaunchCooperativeKernel((void *)reduce_cg, blocks + 1, threads, args,
                                                smem, 0);
    cudaError_t last = cudaGetLastError();
    CK(cudaDeviceSynchronize());
    printf("reduce blocks=%d per_sm=%d sum=%.0f want=%.0f oversized=%s\n", blocks, per_sm, got,
           want, cudaGetErrorName(e));
    if (got != want || e != cudaErrorCooperativeLaunchTooLarge || last != e)
        return 1;
    printf("reduce ok\n");
    CK(cudaFree(in));
    CK(cudaFree(partial));
    CK(cudaFree(out));
    return 0;
}

static int relaxation(void)
{
    unsigned n = 3000;
    int iters = 6;
    std::vector<int> h(n), want(n), tmp(n);
    for (unsigned i = 0; i < n; i++)
        h[i] = want[i] = (int)((i * 7919u) % 10007u);
    for (int it = 0; it < iters; it++) {
        for (unsigned i = 0; i < n; i++)
            tmp[i] = (i == 0 || i == n - 1) ? want[i] : (want[i - 1] + want[i + 1]) / 2;
        want = tmp;
    }
    int *x, *y;
    CK(cudaMalloc(&x, n * sizeof(int)));
    CK(cudaMalloc(&y, n * sizeof(int)));
    CK(cudaMemcpy(x, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    config.gridDim = dim3(24);
    config.blockDim = dim3(64);
    config.attrs = attr;
    config.numAttrs = 1;
    CK(cudaLaunchKernelEx(&config, jacobi, x, y, n, iters));
    CK(cudaMemcpy(h.data(), x, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; i++)
        if (h[i] != want[i]) {
            printf("jacobi x[%u] = %d, want %d\n", i, h[i], want[i]);
            return 1;
        }
    printf("jacobi ok\n");
    CK(cudaFree(x));
    CK(cudaFree(y));
    return 0;
}

int main(void)
{
    if (reduction() || relaxation())
        return 1;
    return 0;
}
