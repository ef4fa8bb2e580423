// Tensor-core WMMA kernels (as in CUDA samples' simpleTensorCoreGEMM).
#include <mma.h>
using namespace nvcuda;

// C (n x n, row-major f32) = 2 * A (row-major) * B (col-major); one warp per 16x16 tile.
extern "C" __global__ void wmma_gemm(const half *a, const half *b, float *c, int n) {
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
    for (int i = 0; i < fc.num_elements; i++) fc.x[i] *= 2.0f;
    wmma::store_matrix_sync(c + warp_m * 16 * n + warp_n * 16, fc, n, wmma::mem_row_major);
}

// 32x8 tile = A (32x16, col-major, staged in shared) * B (16x8 row-major) + C (f16 acc).
extern "C" __global__ void wmma_32x8(const half *a, const half *b, half *c) {
    __shared__ half sa[32 * 16];
    for (int i = threadIdx.x; i < 32 * 16; i += 32) sa[i] = a[i];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> fc;
    wmma::load_matrix_sync(fa, sa, 32);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 32, wmma::mem_col_major);
}
