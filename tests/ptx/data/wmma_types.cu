// WMMA of every element type (sm_80): bf16, tf32, s8/u8 and f64 fragments, each kernel one
// warp computing D = A * B + C, with A/B layouts fixed per kernel, C/D layouts and all
// leading dimensions given at run time.  Built by: nvcc -arch=sm_80 -ptx (see test_wmma_types.py).
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <int M, int N, int K, typename TI, typename TA, typename LA, typename LB,
          typename Acc, typename TC>
__device__ void gemm(const TA *a, const TA *b, const TC *c, TC *d, int lda, int ldb,
                     int ldc, int ldd, int c_col, int d_col, bool round_tf32) {
    wmma::fragment<wmma::matrix_a, M, N, K, TI, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, TI, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, Acc> fc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(fc, c, ldc, c_col ? wmma::mem_col_major : wmma::mem_row_major);
    if constexpr (sizeof(TA) == 4 && sizeof(TC) == 4 && K == 8) {
        if (round_tf32) {
            for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
            for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
        }
    }
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, ldd, d_col ? wmma::mem_col_major : wmma::mem_row_major);
}

#define ARGS(TA, TC) const TA *a, const TA *b, const TC *c, TC *d, int lda, int ldb, \
    int ldc, int ldd, int c_col, int d_col
#define KERNEL(name, M, N, K, TI, TA, LA, LB, Acc, TC, R) \
    extern "C" __global__ void name(ARGS(TA, TC)) { \
        gemm<M, N, K, TI, TA, wmma::LA, wmma::LB, Acc, TC>(a, b, c, d, lda, ldb, ldc, ldd, \
                                                          c_col, d_col, R); }

typedef __nv_bfloat16 bf16;
KERNEL(bf16_m16n16k16_rc, 16, 16, 16, bf16, bf16, row_major, col_major, float, float, false)
KERNEL(bf16_m16n16k16_cr, 16, 16, 16, bf16, bf16, col_major, row_major, float, float, false)
KERNEL(bf16_m32n8k16_rr, 32, 8, 16, bf16, bf16, row_major, row_major, float, float, false)
KERNEL(bf16_m8n32k16_cc, 8, 32, 16, bf16, bf16, col_major, col_major, float, float, false)
KERNEL(tf32_m16n16k8_rc, 16, 16, 8, wmma::precision::tf32, float, row_major, col_major, float, float, false)
KERNEL(tf32_m16n16k8_cr_rna, 16, 16, 8, wmma::precision::tf32, float, col_major, row_major, float, float, true)
KERNEL(s8_m16n16k16_rc, 16, 16, 16, signed char, signed char, row_major, col_major, int, int, false)
KERNEL(s8_m32n8k16_cr, 32, 8, 16, signed char, signed char, col_major, row_major, int, int, false)
KERNEL(u8_m8n32k16_rr, 8, 32, 16, unsigned char, unsigned char, row_major, row_major, int, int, false)
KERNEL(u8_m16n16k16_cc, 16, 16, 16, unsigned char, unsigned char, col_major, col_major, int, int, false)
KERNEL(f64_m8n8k4_rc, 8, 8, 4, double, double, row_major, col_major, double, double, false)
KERNEL(f64_m8n8k4_cr, 8, 8, 4, double, double, col_major, row_major, double, double, false)

// int8 with saturation: mma_sync(..., satf = true)
extern "C" __global__ void s8_m16n16k16_sat(ARGS(signed char, int)) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(fc, c, ldc, c_col ? wmma::mem_col_major : wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc, true);
    wmma::store_matrix_sync(d, fc, ldd, d_col ? wmma::mem_col_major : wmma::mem_row_major);
}

// bf16 staged through shared memory (the .shared state space in the opcode), C scaled
// element by element before the product (fragment elements are per-lane registers)
extern "C" __global__ void bf16_shared_scaled(ARGS(bf16, float)) {
    __shared__ bf16 sa[16 * 16], sb[16 * 16];
    __shared__ float sc[16 * 16];
    for (int i = threadIdx.x; i < 256; i += 32) {
        sa[i] = a[i]; sb[i] = b[i]; sc[i] = c[i];
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, sa, 16);
    wmma::load_matrix_sync(fb, sb, 16);
    wmma::load_matrix_sync(fc, sc, 16, wmma::mem_row_major);
    for (int i = 0; i < fc.num_elements; i++) fc.x[i] *= 2.0f;
    wmma::mma_sync(fc, fa, fb, fc);
    __syncwarp();
    wmma::store_matrix_sync(sc, fc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = threadIdx.x; i < 256; i += 32) d[i] = sc[i];
}
