// Survey corpus: WMMA of the sm_80 element types (bf16, tf32, int8, f64), one warp per
// tile as tensor-core samples write it (bf16TensorCoreGemm, tf32TensorCoreGemm,
// immaTensorCoreGemm, dmmaTensorCoreGemm).  Built for compute_80.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

extern "C" __global__ void bf16_tile(const float *x, float *c)
{
    __shared__ __nv_bfloat16 a[16 * 16], b[16 * 16];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        a[i] = __float2bfloat16(x[i]);
        b[i] = __float2bfloat16(x[256 + i]);
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c + 256 * (threadIdx.x / 32), fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void tf32_tile(const float *a, const float *b, float *c)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 8);
    for (int i = 0; i < fa.num_elements; i++)
        fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_col_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c + 256 * (threadIdx.x / 32), fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void int8_tile(const signed char *a, const unsigned char *b, int *c)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, int> fc;
    wmma::fragment<wmma::matrix_a, 8, 32, 16, unsigned char, wmma::col_major> ga;
    wmma::fragment<wmma::matrix_b, 8, 32, 16, unsigned char, wmma::row_major> gb;
    wmma::fragment<wmma::accumulator, 8, 32, 16, int> gc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, a + 512, 16);
    wmma::fill_fragment(fc, 7);
    wmma::mma_sync(fc, fa, fb, fc, true);
    wmma::store_matrix_sync(c, fc, 8, wmma::mem_row_major);
    wmma::load_matrix_sync(ga, b, 8);
    wmma::load_matrix_sync(gb, b + 128, 32);
    wmma::fill_fragment(gc, -3);
    wmma::mma_sync(gc, ga, gb, gc);
    wmma::store_matrix_sync(c + 256, gc, 32, wmma::mem_col_major);
}

extern "C" __global__ void f64_tile(const double *a, const double *b, double *c)
{
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::load_matrix_sync(fa, a, 4);
    wmma::load_matrix_sync(fb, b, 4);
    wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c + 64, fc, 8, wmma::mem_col_major);
}
