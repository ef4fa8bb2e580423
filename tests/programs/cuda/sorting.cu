// Histograms and sorting networks as the CUDA samples and Parboil write them: a 256-bin
// histogram with shared atomics over packed bytes, per-warp sub-histograms, and bitonic
// sort (a whole array in dynamic shared memory, and the global merge step of a host loop).

extern "C" __global__ void histogram256(const unsigned int *data, unsigned int *hist, int nwords)
{
    __shared__ unsigned int bins[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += blockDim.x * gridDim.x) {
        unsigned int w = data[i];
        atomicAdd(&bins[(w >> 0) & 0xFFu], 1u);
        atomicAdd(&bins[(w >> 8) & 0xFFu], 1u);
        atomicAdd(&bins[(w >> 16) & 0xFFu], 1u);
        atomicAdd(&bins[(w >> 24) & 0xFFu], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (bins[b])
            atomicAdd(&hist[b], bins[b]);
}

// 64 bins per warp in shared memory; uchar4 loads; the block merges its warps' bins.
extern "C" __global__ void histogram64_warps(const uchar4 *data, unsigned int *hist, int n4)
{
    extern __shared__ unsigned int sub[];   // 64 * warps
    int warps = blockDim.x / 32, w = threadIdx.x / 32;
    for (int b = threadIdx.x; b < 64 * warps; b += blockDim.x)
        sub[b] = 0;
    __syncthreads();
    unsigned int *mine = sub + 64 * w;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        uchar4 v = data[i];
        atomicAdd(mine + (v.x >> 2), 1u);
        atomicAdd(mine + (v.y >> 2), 1u);
        atomicAdd(mine + (v.z >> 2), 1u);
        atomicAdd(mine + (v.w >> 2), 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x) {
        unsigned int s = 0;
        for (int k = 0; k < warps; k++)
            s += sub[64 * k + b];
        atomicAdd(&hist[b], s);
    }
}

__device__ inline void cmp_swap(unsigned int &ka, unsigned int &va, unsigned int &kb,
                                unsigned int &vb, unsigned int dir)
{
    if ((ka > kb) == dir) {
        unsigned int t = ka; ka = kb; kb = t;
        t = va; va = vb; vb = t;
    }
}

// Each block sorts 2*blockDim key/value pairs (ascending if dir) in dynamic shared memory.
extern "C" __global__ void bitonic_shared(unsigned int *keys, unsigned int *vals, unsigned int dir)
{
    extern __shared__ unsigned int sh[];
    unsigned int m = 2 * blockDim.x;
    unsigned int *sk = sh, *sv = sh + m;
    keys += blockIdx.x * m;
    vals += blockIdx.x * m;
    unsigned int t = threadIdx.x;
    sk[t] = keys[t]; sv[t] = vals[t];
    sk[t + blockDim.x] = keys[t + blockDim.x]; sv[t + blockDim.x] = vals[t + blockDim.x];
    for (unsigned int size = 2; size < m; size <<= 1) {
        unsigned int ddd = dir ^ ((t & (size / 2)) != 0);
        for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned int pos = 2 * t - (t & (stride - 1));
            cmp_swap(sk[pos], sv[pos], sk[pos + stride], sv[pos + stride], ddd);
        }
    }
    for (unsigned int stride = m / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        unsigned int pos = 2 * t - (t & (stride - 1));
        cmp_swap(sk[pos], sv[pos], sk[pos + stride], sv[pos + stride], dir);
    }
    __syncthreads();
    keys[t] = sk[t]; vals[t] = sv[t];
    keys[t + blockDim.x] = sk[t + blockDim.x]; vals[t + blockDim.x] = sv[t + blockDim.x];
}

// One step (j, k) of a global bitonic sort of floats; the host loops over k and j.
extern "C" __global__ void bitonic_step(float *a, int j, int k)
{
    unsigned int i = threadIdx.x + blockDim.x * blockIdx.x;
    unsigned int ixj = i ^ j;
    if (ixj > i) {
        float x = a[i], y = a[ixj];
        bool up = (i & k) == 0;
        if ((up && x > y) || (!up && x < y)) {
            a[i] = y;
            a[ixj] = x;
        }
    }
}
