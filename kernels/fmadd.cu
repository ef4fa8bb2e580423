// FMADD: float matrix addition (Gdev test/cuda fmadd, kernel `add`).
// c[i][j] = a[i][j] + b[i][j] for n x n row-major float matrices.
// Launch: block (16,16,1), grid (ceil(n/16), ceil(n/16), 1).
extern "C" __global__ void add(const float *a, const float *b, float *c, unsigned int n)
{
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        unsigned int idx = i * n + j;
        c[idx] = a[idx] + b[idx];
    }
}
