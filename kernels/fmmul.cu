// FMMUL: float matrix multiply (Gdev test/cuda fmmul), naive and shared-memory tiled.
// n x n row-major float matrices. Launch both: block (16,16,1),
// grid (ceil(n/16), ceil(n/16), 1); x runs over columns.

#define TILE 16

// c = a * b, one thread per output element; k ascending, one fused multiply-add per step.
extern "C" __global__ void multiply(const float *a, const float *b, float *c, unsigned int n)
{
    unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (unsigned int k = 0; k < n; k++)
            sum += a[row * n + k] * b[k * n + col];
        c[row * n + col] = sum;
    }
}

// c = a * b with 16x16 shared-memory tiles (the CUDA programming guide's matrixMul shape).
// Requires blockDim == (16,16,1).
extern "C" __global__ void multiply_tiled(const float *a, const float *b, float *c,
                                          unsigned int n)
{
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    unsigned int col = blockIdx.x * TILE + tx;
    unsigned int row = blockIdx.y * TILE + ty;
    float sum = 0.0f;
    for (unsigned int t = 0; t < n; t += TILE) {
        ta[ty][tx] = (row < n && t + tx < n) ? a[row * n + t + tx] : 0.0f;
        tb[ty][tx] = (col < n && t + ty < n) ? b[(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            sum += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        c[row * n + col] = sum;
}
