// Shared-memory tree reductions: each block writes one partial result; the host (or a second
// launch over the partials) finishes. Launch: 1-D, blockDim a power of two <= 1024.

// partial[blockIdx.x] = sum of in[i] for the 2*blockDim.x elements the block covers
// (elements past n count as 0). Dynamic shared memory: blockDim.x * 4 bytes.
// Float sum: the order is the tree's, so compare with a tolerance.
extern "C" __global__ void reduce_sum_f32(const float *in, float *partial, unsigned int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + tid;
    float v = 0.0f;
    if (i < n)
        v = in[i];
    if (i + blockDim.x < n)
        v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}

// partial[blockIdx.x] = (sum, min, max) of the unsigned in[i] covered by the block
// (blockDim.x elements per block, grid-stride: block b also takes b + gridDim.x, ...).
// Static shared memory; requires blockDim.x <= 256. Sum is modulo 2^32; empty -> (0, ~0u, 0).
extern "C" __global__ void reduce_stats_u32(const unsigned int *in, unsigned int *partial,
                                            unsigned int n)
{
    __shared__ unsigned int ssum[256];
    __shared__ unsigned int smin[256];
    __shared__ unsigned int smax[256];
    unsigned int tid = threadIdx.x;
    unsigned int sum = 0, mn = 0xffffffffu, mx = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) {
        unsigned int v = in[i];
        sum += v;
        mn = min(mn, v);
        mx = max(mx, v);
    }
    ssum[tid] = sum;
    smin[tid] = mn;
    smax[tid] = mx;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            ssum[tid] += ssum[tid + s];
            smin[tid] = min(smin[tid], smin[tid + s]);
            smax[tid] = max(smax[tid], smax[tid + s]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[3 * blockIdx.x + 0] = ssum[0];
        partial[3 * blockIdx.x + 1] = smin[0];
        partial[3 * blockIdx.x + 2] = smax[0];
    }
}

// out[blockIdx.x] = sum of in[] over the block's blockDim.x elements using warp shuffles
// (__shfl_down_sync) and one shared slot per warp. Requires blockDim.x a multiple of 32.
extern "C" __global__ void reduce_sum_shfl_s32(const int *in, int *partial, unsigned int n)
{
    __shared__ int warp_sums[32];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0)
            partial[blockIdx.x] = v;
    }
}
