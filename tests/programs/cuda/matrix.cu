// Dense linear algebra as the CUDA samples and PolyBench-GPU write it: tiled GEMM in shared
// memory (templated on type and tile), transposes (naive and padded against bank
// conflicts), a warp-per-row GEMV reduced with shuffles, and a 3D grid that batches GEMV.

template <typename T, int TILE>
__global__ void gemm_tiled(const T *A, const T *B, T *C, int M, int N, int K, T alpha, T beta)
{
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    T acc = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : T(0);
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : T(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

template __global__ void gemm_tiled<float, 16>(const float *, const float *, float *, int, int,
                                               int, float, float);
template __global__ void gemm_tiled<float, 8>(const float *, const float *, float *, int, int,
                                              int, float, float);
template __global__ void gemm_tiled<double, 16>(const double *, const double *, double *, int,
                                                int, int, double, double);

#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_naive(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            out[x * height + y + j] = in[(y + j) * width + x];
}

extern "C" __global__ void transpose_padded(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = warpSize / 2; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// y[b][r] = A[b] x[b], one warp per row; blockIdx.z is the batch.
extern "C" __global__ void gemv_batched(const float *A, const float *x, float *y, int rows,
                                        int cols)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int lane = threadIdx.x % warpSize;
    int b = blockIdx.z;
    if (warp >= rows)
        return;
    const float *a = A + ((size_t)b * rows + warp) * cols;
    const float *v = x + (size_t)b * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += warpSize)
        s += a[c] * v[c];
    s = warp_sum(s);
    if (lane == 0)
        y[b * rows + warp] = s;
}

// PolyBench's 2mm-style row-major DGEMM without tiling, plain double FMA chains.
extern "C" __global__ void dgemm_naive(const double *A, const double *B, double *C, int n)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        double s = 0.0;
        for (int k = 0; k < n; k++)
            s += A[i * n + k] * B[k * n + j];
        C[i * n + j] = s;
    }
}
