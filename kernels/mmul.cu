// MMUL: the paper's matrix-multiply micro-benchmark (Gdev test/cuda mmul, kernel `multiply`)
// for n x n row-major unsigned matrices (arithmetic modulo 2^32), naive and tiled.
// Launch both: block (16,16,1), grid (ceil(n/16), ceil(n/16), 1); x runs over columns.

#define TILE 16

// c = a * b, one thread per output element, operands straight from global memory.
extern "C" __global__ void multiply(const unsigned int *a, const unsigned int *b,
                                    unsigned int *c, unsigned int n)
{
    unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        unsigned int sum = 0;
        for (unsigned int k = 0; k < n; k++)
            sum += a[row * n + k] * b[k * n + col];
        c[row * n + col] = sum;
    }
}

// c = a * b with 16x16 shared-memory tiles; edges of non-multiple n are padded with zeros.
// Requires blockDim == (16,16,1).
extern "C" __global__ void multiply_tiled(const unsigned int *a, const unsigned int *b,
                                          unsigned int *c, unsigned int n)
{
    __shared__ unsigned int ta[TILE][TILE];
    __shared__ unsigned int tb[TILE][TILE];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    unsigned int col = blockIdx.x * TILE + tx;
    unsigned int row = blockIdx.y * TILE + ty;
    unsigned int sum = 0;
    for (unsigned int t = 0; t < n; t += TILE) {
        ta[ty][tx] = (row < n && t + tx < n) ? a[row * n + t + tx] : 0;
        tb[ty][tx] = (col < n && t + ty < n) ? b[(t + ty) * n + col] : 0;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            sum += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        c[row * n + col] = sum;
}
