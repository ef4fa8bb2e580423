// The grid's own kernels (libgdev/grid): the paper's null kernel and the guest matrix multiply.
// grid.ptx beside this file is generated with `nvcc -ptx -arch=compute_75 -O3` and committed.

// The null kernel: returns at once. Its time k, against the dedicated time alpha, tells a
// partially idle GPU from a fully idle one (GPU-grid paper, Sec. IV). `out` and `n` keep the
// launch shape of a real kernel; nothing is written unless n is nonzero.
extern "C" __global__ void null(unsigned int *out, unsigned int n)
{
    if (n)
        *out = n;
}

// One guest piece of C = A * B (unsigned, modulo 2^32, row-major): c (rows x n) = a (rows x m)
// * b (m x n). Launch: block (16,16,1), grid (ceil(n/16), ceil(rows/16), 1); x runs over columns.
extern "C" __global__ void matmul_rows(const unsigned int *a, const unsigned int *b,
                                       unsigned int *c, unsigned int rows, unsigned int m,
                                       unsigned int n)
{
    unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < n) {
        unsigned int sum = 0;
        for (unsigned int k = 0; k < m; k++)
            sum += a[row * m + k] * b[k * n + col];
        c[row * n + col] = sum;
    }
}
