// Survey corpus: warp matrix multiply-accumulate (WMMA, sm_70+), as CUDA samples' tensor-core
// GEMMs use it: one warp computes a 16x16 tile of C = A * B + C from half inputs.
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const half *a, const half *b, float *c, int n)
{
    int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int warp_n = blockIdx.y;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(fa, a + warp_m * 16 * n + k, n);
        wmma::load_matrix_sync(fb, b + warp_n * 16 * n + k, n);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    for (int i = 0; i < fc.num_elements; i++)
        fc.x[i] *= 2.0f;
    wmma::store_matrix_sync(c + warp_m * 16 * n + warp_n * 16, fc, n, wmma::mem_row_major);
}
