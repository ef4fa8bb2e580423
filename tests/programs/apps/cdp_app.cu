// Dynamic parallelism in an nvcc application (-rdc=true -lcudadevrt), three parts with the
// shapes of public programs:
//  * print: every block's first thread launches a grid of its own shape, to a given depth;
//    each grid prints its depth, block and unique id (cdpSimplePrint's shape); then a
//    kernel that does not print launches one that does (its output comes at the sync);
//  * qsort: a recursive single-thread quicksort, each half sorted by a child grid in its own
//    device-created non-blocking stream, selection sort at the depth limit or for short
//    runs (cdpSimpleQuicksort's shape), checked against the host's sort;
//  * scan: an inclusive prefix sum in log2(n) passes over many blocks, each pass
//    tail-launched by the one before (a tail launch starts only once every block of its
//    parent grid is done), checked against the host's sum.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// -- print -------------------------------------------------------------------------------
__device__ int g_uids = 0;

__global__ void tree_print(int max_depth, int depth, int parent_uid)
{
    __shared__ int uid;
    if (threadIdx.x == 0)
        uid = atomicAdd(&g_uids, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        printf("grid depth=%d block=%d uid=%d parent=%d\n", depth, blockIdx.x, uid, parent_uid);
        if (depth + 1 < max_depth)
            tree_print<<<gridDim.x, blockDim.x>>>(max_depth, depth + 1, uid);
    }
}

// a kernel that does not print, launching one that does: its output comes at the sync
__global__ void quiet_parent()
{
    tree_print<<<1, 1>>>(1, 0, -2);
}

// -- qsort -------------------------------------------------------------------------------
#define QSORT_MAX_DEPTH 16
#define SELECTION_SORT 32

__device__ void selection_sort(unsigned *v, int lo, int hi)
{
    for (int i = lo; i <= hi; i++) {
        int best = i;
        for (int j = i + 1; j <= hi; j++)
            if (v[j] < v[best])
                best = j;
        unsigned t = v[i];
        v[i] = v[best];
        v[best] = t;
    }
}

__global__ void quicksort(unsigned *v, int lo, int hi, int depth, int *launch_errors)
{
    if (depth >= QSORT_MAX_DEPTH || hi - lo <= SELECTION_SORT) {
        selection_sort(v, lo, hi);
        return;
    }
    unsigned pivot = v[(lo + hi) / 2];
    int l = lo, r = hi;
    while (l <= r) {
        while (v[l] < pivot) l++;
        while (v[r] > pivot) r--;
        if (l <= r) {
            unsigned t = v[l];
            v[l++] = v[r];
            v[r--] = t;
        }
    }
    if (lo < r) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(v, lo, r, depth + 1, launch_errors);
        cudaStreamDestroy(s);
    }
    if (l < hi) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(v, l, hi, depth + 1, launch_errors);
        cudaStreamDestroy(s);
    }
    if (cudaGetLastError() != cudaSuccess)
        atomicAdd(launch_errors, 1);
}

// -- scan --------------------------------------------------------------------------------
__global__ void scan_pass(const int *in, int *out, int n, int shift)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] + (i >= shift ? in[i - shift] : 0);
    if (i == 0 && 2 * shift < n)        // the next pass, once this whole grid is done
        scan_pass<<<gridDim.x, blockDim.x, 0, cudaStreamTailLaunch>>>(out, (int *)in, n,
                                                                       2 * shift);
}

static int run_print()
{
    tree_print<<<2, 4>>>(3, 0, -1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int uids = 0;
    CK(cudaMemcpyFromSymbol(&uids, g_uids, sizeof uids));
    printf("print grids=%d\n", uids);
    if (uids != 2 + 4 + 8)
        return 0;
    quiet_parent<<<1, 1>>>();
    CK(cudaDeviceSynchronize());
    printf("quiet parent synchronized\n");
    return 1;
}

static int run_qsort(int n)
{
    std::vector<unsigned> h(n);
    srand(7);
    for (int i = 0; i < n; i++)
        h[i] = rand() % 100000;
    unsigned *d;
    int *errs;
    CK(cudaMalloc(&d, n * sizeof *d));
    CK(cudaMalloc(&errs, sizeof *errs));
    CK(cudaMemset(errs, 0, sizeof *errs));
    CK(cudaMemcpy(d, h.data(), n * sizeof *d, cudaMemcpyHostToDevice));
    quicksort<<<1, 1>>>(d, 0, n - 1, 0, errs);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned> got(n);
    int e = 0;
    CK(cudaMemcpy(got.data(), d, n * sizeof *d, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&e, errs, sizeof e, cudaMemcpyDeviceToHost));
    std::sort(h.begin(), h.end());
    CK(cudaFree(d));
    CK(cudaFree(errs));
    printf("qsort n=%d launch_errors=%d\n", n, e);
    return got == h && e == 0;
}

static int run_scan(int n)
{
    std::vector<int> h(n);
    for (int i = 0; i < n; i++)
        h[i] = (i * 37) % 101 - 50;
    int *a, *b;
    CK(cudaMalloc(&a, n * sizeof *a));
    CK(cudaMalloc(&b, n * sizeof *b));
    CK(cudaMemcpy(a, h.data(), n * sizeof *a, cudaMemcpyHostToDevice));
    scan_pass<<<(n + 255) / 256, 256>>>(a, b, n, 1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int passes = 0;
    for (int s = 1; s < n; s *= 2)
        passes++;
    std::vector<int> got(n);
    CK(cudaMemcpy(got.data(), passes % 2 ? b : a, n * sizeof *a, cudaMemcpyDeviceToHost));
    for (int i = 1; i < n; i++)
        h[i] += h[i - 1];
    CK(cudaFree(a));
    CK(cudaFree(b));
    printf("scan n=%d passes=%d\n", n, passes);
    return got == h;
}

int main()
{
    size_t pending = 0;
    CK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 2048));
    CK(cudaDeviceGetLimit(&pending, cudaLimitDevRuntimePendingLaunchCount));
    if (pending != 2048)
        return printf("pending limit %zu\n", pending), 1;
    if (!run_print())
        return printf("print FAILED\n"), 1;
    if (!run_qsort(3000))
        return printf("qsort FAILED\n"), 1;
    if (!run_scan(4096))
        return printf("scan FAILED\n"), 1;
    printf("cdp ok\n");
    return 0;
}
