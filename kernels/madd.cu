// MADD: the paper's matrix-addition micro-benchmark (Gdev test/cuda madd, kernel `add`).
// c[i][j] = a[i][j] + b[i][j] for n x n row-major unsigned matrices.
// Launch: block (16,16,1), grid (ceil(n/16), ceil(n/16), 1); x runs over columns.
extern "C" __global__ void add(const unsigned int *a, const unsigned int *b,
                               unsigned int *c, unsigned int n)
{
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        unsigned int idx = i * n + j;
        c[idx] = a[idx] + b[idx];
    }
}
