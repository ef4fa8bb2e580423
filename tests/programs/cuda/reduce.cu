// Reductions and scans as the CUDA samples write them: a shared-memory tree with a
// warp-synchronous tail, shuffles, atomics (int, float, double), a Blelloch scan over
// dynamic shared memory with bank-conflict padding, and a warp-shuffle scan.

template <unsigned int blockSize>
__device__ void warp_reduce(volatile float *s, unsigned int tid)
{
    if (blockSize >= 64) s[tid] += s[tid + 32];
    if (blockSize >= 32) s[tid] += s[tid + 16];
    if (blockSize >= 16) s[tid] += s[tid + 8];
    if (blockSize >= 8) s[tid] += s[tid + 4];
    if (blockSize >= 4) s[tid] += s[tid + 2];
    if (blockSize >= 2) s[tid] += s[tid + 1];
}

// reduce5: first add during load, unrolled tree, warp-synchronous last 32.
template <unsigned int blockSize>
__global__ void reduce_tree(const float *in, float *out, unsigned int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int grid = blockSize * 2 * gridDim.x;
    float sum = 0.0f;
    while (i < n) {
        sum += in[i];
        if (i + blockSize < n)
            sum += in[i + blockSize];
        i += grid;
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32)
        warp_reduce<blockSize>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

template __global__ void reduce_tree<256>(const float *, float *, unsigned int);
template __global__ void reduce_tree<64>(const float *, float *, unsigned int);

// Shuffle reduction: each warp reduces, warp 0 reduces the warp sums; int total by atomics.
extern "C" __global__ void reduce_shfl_int(const int *in, int *total, unsigned long long *sq,
                                           int n)
{
    __shared__ int warp_sums[32];
    int v = 0;
    unsigned long long s2 = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        v += in[i];
        s2 += (long long)in[i] * in[i];
    }
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xffffffff, v, off);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0;
        for (int off = 16; off > 0; off /= 2)
            v += __shfl_xor_sync(0xffffffff, v, off);
        if (lane == 0)
            atomicAdd(total, v);
    }
    atomicAdd(sq, s2);
}

// Float and double atomics: every thread adds into a handful of bins (order varies).
extern "C" __global__ void atomic_float_bins(const float *in, float *fb, double *db, int *mx,
                                             unsigned int *mn, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&fb[i & 7], in[i]);
        atomicAdd(&db[i & 3], (double)in[i]);
        atomicMax(mx, __float_as_int(in[i]));   // inputs are non-negative
        atomicMin(mn, (unsigned int)(in[i] * 1000.0f));
    }
}

#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)

// Blelloch exclusive scan of 2*blockDim elements per block; block totals to sums.
extern "C" __global__ void scan_blelloch(const unsigned int *in, unsigned int *out,
                                         unsigned int *sums, int n)
{
    extern __shared__ unsigned int temp[];
    int tid = threadIdx.x, m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    int ai = tid, bi = tid + blockDim.x;
    int oa = CONFLICT_FREE_OFFSET(ai), ob = CONFLICT_FREE_OFFSET(bi);
    temp[ai + oa] = base + ai < n ? in[base + ai] : 0;
    temp[bi + ob] = base + bi < n ? in[base + bi] : 0;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (tid == 0) {
        int last = m - 1 + CONFLICT_FREE_OFFSET(m - 1);
        sums[blockIdx.x] = temp[last];
        temp[last] = 0;
    }
    for (int d = 1; d < m; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            unsigned int t = temp[a];
            temp[a] = temp[b];
            temp[b] += t;
        }
    }
    __syncthreads();
    if (base + ai < n) out[base + ai] = temp[ai + oa];
    if (base + bi < n) out[base + bi] = temp[bi + ob];
}

extern "C" __global__ void scan_add(unsigned int *data, const unsigned int *sums, int n)
{
    int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;
    unsigned int s = sums[blockIdx.x];
    if (i < n) data[i] += s;
    if (i + blockDim.x < n) data[i + blockDim.x] += s;
}

// Inclusive scan of floats per block: shuffles within warps, warp totals through shared.
extern "C" __global__ void scan_warp(const float *in, float *out, int n)
{
    __shared__ float totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    float v = i < n ? in[i] : 0.0f;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        float u = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d)
            v += u;
    }
    if (lane == 31)
        totals[w] = v;
    __syncthreads();
    if (w == 0) {
        float t = lane < blockDim.x / 32 ? totals[lane] : 0.0f;
        for (int d = 1; d < 32; d <<= 1) {
            float u = __shfl_up_sync(0xffffffff, t, d);
            if (lane >= d)
                t += u;
        }
        totals[lane] = t;
    }
    __syncthreads();
    if (w > 0)
        v += totals[w - 1];
    if (i < n)
        out[i] = v;
}
