// Atomic histograms. Launch: 1-D, any geometry; threads stride over the input.

// bins[v % nbins] += 1 for every in[i], with per-block counts in dynamic shared memory
// (nbins * 4 bytes) merged into the global bins with one atomicAdd per bin and block.
// bins must be zeroed by the caller (or hold counts to accumulate onto).
extern "C" __global__ void histogram_shared(const unsigned int *in, unsigned int n,
                                            unsigned int *bins, unsigned int nbins)
{
    extern __shared__ unsigned int local[];
    for (unsigned int b = threadIdx.x; b < nbins; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    unsigned int stride = blockDim.x * gridDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[in[i] % nbins], 1u);
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < nbins; b += blockDim.x)
        if (local[b])
            atomicAdd(&bins[b], local[b]);
}

// 256-bin byte histogram straight into global memory: bins[byte] += 1 for each of n bytes.
extern "C" __global__ void histogram_bytes_global(const unsigned char *in, unsigned int n,
                                                  unsigned int *bins)
{
    unsigned int stride = blockDim.x * gridDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[in[i]], 1u);
}

// Float atomics and atomic min/max: sums[k] += w[i], mins[k] = min, maxs[k] = max over the
// elements with key[i] == k (keys < nkeys). Caller initialises sums 0, mins INT_MAX, maxs INT_MIN.
extern "C" __global__ void scatter_atomics(const unsigned int *key, const float *w,
                                           const int *v, unsigned int n, float *sums,
                                           int *mins, int *maxs)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int k = key[i];
        atomicAdd(&sums[k], w[i]);
        atomicMin(&mins[k], v[i]);
        atomicMax(&maxs[k], v[i]);
    }
}
