// Dynamic parallelism in an nvcc application (-rdc=true -lcudadevrt), three parts with the
// shapes of public programs:
//  * print: every block's first thread launches a grid of its own shape, to a given depth;
//    each grid prints its depth, block and unique id (cdpSimplePrint's shape); then a
//    kernel that does not print launches one that does (its output comes at the sync);
//  * qsort: a recursive single-thread quicksort, each half sorted by a child grid in its own
//    device-created non-blocking stream, selection sort at the depth limit or for short
//    runs (cdpSimpleQuicksort's shape), checked against the host's sort;
//  * advanced: a multi-block quicksort whose last block of each level launches the next
//    (cdpAdvancedQuicksort's shape), checked against the host's sort;
//  * scan: an inclusive prefix sum in log2(n) passes over many blocks, each pass
//    tail-launched by the one before (a tail launch starts only once every block of its
//    parent grid is done), checked against the host's sum;
//  * scratch: each thread cudaMallocs a buffer in device code, clears it with
//    cudaMemsetAsync, a child grid adds to it and cudaMemcpyAsync copies it out, all in
//    stream order; a later kernel cudaFrees the buffers (cdpAdvancedQuicksort's calls).
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

// -- multi-block quicksort (cdpAdvancedQuicksort's shape) ---------------------------------
// Each level partitions [lo, lo + n) of `src` into `dst` around a pivot over many blocks:
// warps count their lanes' sides with __ballot_sync/__popc and claim room with one atomicAdd
// each; the last block to finish (an atomicAdd on the level's counter after a
// __threadfence) launches the two sides in non-blocking streams, a short side as one
// block's bitonic sort in shared memory.  Equal keys go to a third, middle run.
#define ADV_BLOCK 128
#define BITONIC 256

struct Level { unsigned lt, gt, done; };

__global__ void bitonic(unsigned *v, unsigned *other, int n)
{
    __shared__ unsigned s[BITONIC];
    int t = threadIdx.x;
    s[t] = t < n ? v[t] : 0xffffffffu;
    __syncthreads();
    for (int k = 2; k <= BITONIC; k *= 2)
        for (int j = k / 2; j > 0; j /= 2) {
            int p = t ^ j;
            if (p > t) {
                bool up = (t & k) == 0;
                if ((s[t] > s[p]) == up) {
                    unsigned x = s[t];
                    s[t] = s[p];
                    s[p] = x;
                }
            }
            __syncthreads();
        }
    if (t < n)
        v[t] = other[t] = s[t];
}

__global__ void adv_qsort(unsigned *src, unsigned *dst, int n, Level *levels, int me,
                          int *next)
{
    __shared__ unsigned pivot;
    __shared__ int eq_count;
    Level *lv = &levels[me];            // this launch's counters
    if (threadIdx.x == 0) {
        pivot = src[n / 2];
        eq_count = 0;
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i < n ? src[i] : 0;
    bool lt = i < n && v < pivot, gt = i < n && v > pivot;
    unsigned lane = threadIdx.x % 32, below = (1u << lane) - 1;
    unsigned mlt = __ballot_sync(0xffffffffu, lt), mgt = __ballot_sync(0xffffffffu, gt);
    unsigned base_lt = 0, base_gt = 0;
    if (lane == 0) {
        base_lt = atomicAdd(&lv->lt, __popc(mlt));
        base_gt = atomicAdd(&lv->gt, __popc(mgt));
    }
    base_lt = __shfl_sync(0xffffffffu, base_lt, 0);
    base_gt = __shfl_sync(0xffffffffu, base_gt, 0);
    if (lt)
        dst[base_lt + __popc(mlt & below)] = v;
    if (gt)
        dst[n - 1 - (base_gt + __popc(mgt & below))] = v;
    if (i < n && !lt && !gt)
        atomicAdd(&eq_count, 1);
    __syncthreads();
    __threadfence();
    if (threadIdx.x != 0 || atomicAdd(&lv->done, 1) != gridDim.x - 1)
        return;
    // the last block: the middle run is the pivot, then the two sides one level down
    unsigned nlt = atomicAdd(&lv->lt, 0), ngt = atomicAdd(&lv->gt, 0);
    for (unsigned k = nlt; k < n - ngt; k++)
        dst[k] = src[k] = pivot;
    int sides[2][2] = {{0, (int)nlt}, {(int)(n - ngt), (int)ngt}};
    for (int s = 0; s < 2; s++) {
        int off = sides[s][0], len = sides[s][1];
        if (len <= 1) {
            if (len == 1)
                src[off] = dst[off];
            continue;
        }
        cudaStream_t st;
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
        if (len <= BITONIC) {
            bitonic<<<1, BITONIC, 0, st>>>(dst + off, src + off, len);
        } else {
            adv_qsort<<<(len + ADV_BLOCK - 1) / ADV_BLOCK, ADV_BLOCK, 0, st>>>(
                dst + off, src + off, len, levels, atomicAdd(next, 1), next);
        }
        cudaStreamDestroy(st);
    }
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

// sorts in place: every level writes its final keys back to both buffers
static int run_advanced(int n)
{
    std::vector<unsigned> h(n);
    srand(11);
    for (int i = 0; i < n; i++)
        h[i] = rand() % 5000;         // many equal keys
    unsigned *a, *b;
    Level *levels;
    int *next;
    int most = n;                      // at most one level per element
    CK(cudaMalloc(&a, n * sizeof *a));
    CK(cudaMalloc(&b, n * sizeof *b));
    CK(cudaMalloc(&levels, most * sizeof *levels));
    CK(cudaMalloc(&next, sizeof *next));
    CK(cudaMemset(levels, 0, most * sizeof *levels));
    int one = 1;
    CK(cudaMemcpy(next, &one, sizeof one, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(a, h.data(), n * sizeof *a, cudaMemcpyHostToDevice));
    adv_qsort<<<(n + ADV_BLOCK - 1) / ADV_BLOCK, ADV_BLOCK>>>(a, b, n, levels, 0, next);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned> got(n);
    int used = 0;
    CK(cudaMemcpy(got.data(), a, n * sizeof *a, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&used, next, sizeof used, cudaMemcpyDeviceToHost));
    std::sort(h.begin(), h.end());
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(levels));
    CK(cudaFree(next));
    printf("advanced n=%d %s\n", n, used > 1 ? "recursed" : "flat");
    return got == h;
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

// -- scratch -----------------------------------------------------------------------------
#define SCRATCH 64

__global__ void scratch_add(int *p, int t)
{
    p[threadIdx.x] += t + threadIdx.x;
}

__global__ void scratch_make(int **slots, int *out, int *errs)
{
    int t = threadIdx.x, *p = nullptr;
    cudaStream_t s;
    errs[t] = cudaMalloc((void **)&p, SCRATCH * sizeof(int));
    slots[t] = p;
    if (errs[t])
        return;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMemsetAsync(p, 0, SCRATCH * sizeof(int), s);
    scratch_add<<<1, SCRATCH, 0, s>>>(p, t);
    cudaMemcpyAsync(out + SCRATCH * t, p, SCRATCH * sizeof(int), cudaMemcpyDeviceToDevice, s);
    cudaStreamDestroy(s);
}

__global__ void scratch_free(int **slots, int *errs)
{
    errs[threadIdx.x] = cudaFree(slots[threadIdx.x]);
}

static int run_scratch(int n)
{
    int **slots, *out, *errs;
    CK(cudaMalloc(&slots, n * sizeof *slots));
    CK(cudaMalloc(&out, n * SCRATCH * sizeof *out));
    CK(cudaMalloc(&errs, 2 * n * sizeof *errs));
    CK(cudaMemset(out, 0xFF, n * SCRATCH * sizeof *out));
    scratch_make<<<1, n>>>(slots, out, errs);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    scratch_free<<<1, n>>>(slots, errs + n);
    CK(cudaDeviceSynchronize());
    std::vector<int> got(n * SCRATCH), err(2 * n);
    CK(cudaMemcpy(got.data(), out, got.size() * sizeof *out, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(err.data(), errs, err.size() * sizeof *errs, cudaMemcpyDeviceToHost));
    int wrong = 0, failed = 0;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < SCRATCH; i++)
            wrong += got[t * SCRATCH + i] != t + i;
    for (int e : err)
        failed += e != 0;
    CK(cudaFree(slots));
    CK(cudaFree(out));
    CK(cudaFree(errs));
    printf("scratch n=%d wrong=%d failed=%d\n", n, wrong, failed);
    return !wrong && !failed;
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
    if (!run_advanced(6000))
        return printf("advanced FAILED\n"), 1;
    if (!run_scan(4096))
        return printf("scan FAILED\n"), 1;
    if (!run_scratch(48))
        return printf("scratch FAILED\n"), 1;
    printf("cdp ok\n");
    return 0;
}
