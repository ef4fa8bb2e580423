// Survey corpus: shapes from CUDA samples and common suites: scan, bitonic sort, transpose
// with padding, constant-memory convolution, grid-stride SAXPY, templated block reduce.
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void __launch_bounds__(256, 2) saxpy(int n, float a, const float *x, float *y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void scan_block(const float *in, float *out, int n)
{
    extern __shared__ float temp[];
    int thid = threadIdx.x;
    int pout = 0, pin = 1;
    temp[pout * n + thid] = (thid > 0) ? in[thid - 1] : 0;
    __syncthreads();
    for (int offset = 1; offset < n; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (thid >= offset)
            temp[pout * n + thid] = temp[pin * n + thid] + temp[pin * n + thid - offset];
        else
            temp[pout * n + thid] = temp[pin * n + thid];
        __syncthreads();
    }
    out[thid] = temp[pout * n + thid];
}

extern "C" __global__ void bitonic_sort(unsigned int *keys, unsigned int *vals)
{
    extern __shared__ unsigned int s[];
    unsigned int *sk = s, *sv = s + blockDim.x;
    unsigned int t = threadIdx.x;
    sk[t] = keys[t];
    sv[t] = vals[t];
    __syncthreads();
    for (unsigned int size = 2; size <= blockDim.x; size <<= 1)
        for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
            unsigned int pos = 2 * t - (t & (stride - 1));
            if (pos + stride < blockDim.x && t < blockDim.x / 2) {
                bool dir = (t & (size / 2)) != 0;
                unsigned int a = sk[pos], b = sk[pos + stride];
                if ((a > b) != dir) {
                    sk[pos] = b;
                    sk[pos + stride] = a;
                    unsigned int tmp = sv[pos];
                    sv[pos] = sv[pos + stride];
                    sv[pos + stride] = tmp;
                }
            }
            __syncthreads();
        }
    keys[t] = sk[t];
    vals[t] = sv[t];
}

extern "C" __global__ void transpose(float *odata, const float *idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__constant__ float c_kernel[17];

extern "C" __global__ void convolution_rows(float *dst, const float *src, int w, int h, int r)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    float sum = 0;
    for (int k = -r; k <= r; k++) {
        int xx = min(max(x + k, 0), w - 1);
        sum += src[y * w + xx] * c_kernel[r - k];
    }
    dst[y * w + x] = sum;
}

template <unsigned int blockSize, typename T>
__global__ void reduce6(const T *g_idata, T *g_odata, unsigned int n)
{
    extern __shared__ unsigned char smem_raw[];
    T *sdata = reinterpret_cast<T *>(smem_raw);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    T sum = 0;
    while (i < n) {
        sum += g_idata[i];
        if (i + blockSize < n)
            sum += g_idata[i + blockSize];
        i += gridSize;
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512 && tid < 256) sdata[tid] = sum = sum + sdata[tid + 256];
    __syncthreads();
    if (blockSize >= 256 && tid < 128) sdata[tid] = sum = sum + sdata[tid + 128];
    __syncthreads();
    if (blockSize >= 128 && tid < 64) sdata[tid] = sum = sum + sdata[tid + 64];
    __syncthreads();
    if (tid < 32) {
        if (blockSize >= 64) sum += sdata[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (tid == 0)
        g_odata[blockIdx.x] = sum;
}

template __global__ void reduce6<256, float>(const float *, float *, unsigned int);
template __global__ void reduce6<512, double>(const double *, double *, unsigned int);
template __global__ void reduce6<128, int>(const int *, int *, unsigned int);
