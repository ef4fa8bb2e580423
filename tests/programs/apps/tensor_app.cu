// Tensor-core GEMMs of the sm_80 element types as the CUDA samples write them
// (bf16TensorCoreGemm, tf32TensorCoreGemm, immaTensorCoreGemm, dmmaTensorCoreGemm: one
// warp per output tile, K walked in fragment steps), run unchanged on gdev-py
// (tests/programs/test_async_apps.py).  Each result is checked on the host against the
// engine's documented arithmetic (bf16/tf32 products exact, sums in double rounded once;
// int8 exact in s32; f64 one fma per k) and the program prints "<name> ok" for each.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define N 64            // every matrix is N x N; tiles of 16 x 16 (8 x 8 for f64)

template <typename T, int K, typename TI>
__device__ void tile_gemm(const T *a, const T *b, float *c, bool round)
{
    int tm = blockIdx.y, tn = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    wmma::fragment<wmma::matrix_a, 16, 16, K, TI, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, K, TI, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, K, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < N; k += K) {
        wmma::load_matrix_sync(fa, a + tm * 16 * N + k, N);
        wmma::load_matrix_sync(fb, b + tn * 16 * N + k, N);
        if constexpr (K == 8) {
            if (round) {
                for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
                for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
            }
        }
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}

__global__ void bf16_gemm(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c)
{
    tile_gemm<__nv_bfloat16, 16, __nv_bfloat16>(a, b, c, false);
}

__global__ void tf32_gemm(const float *a, const float *b, float *c)
{
    tile_gemm<float, 8, wmma::precision::tf32>(a, b, c, true);
}

__global__ void int8_gemm(const signed char *a, const signed char *b, int *c)
{
    int tm = blockIdx.y, tn = threadIdx.x / 32 + blockIdx.x * (blockDim.x / 32);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fc, c + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
    for (int k = 0; k < N; k += 16) {
        wmma::load_matrix_sync(fa, a + tm * 16 * N + k, N);
        wmma::load_matrix_sync(fb, b + tn * 16 * N + k, N);
        wmma::mma_sync(fc, fa, fb, fc, true);
    }
    wmma::store_matrix_sync(c + tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}

__global__ void f64_gemm(const double *a, const double *b, double *c)
{
    int tm = blockIdx.y, tn = threadIdx.x / 32 + blockIdx.x * (blockDim.x / 32);
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::fill_fragment(fc, 0.0);
    for (int k = 0; k < N; k += 4) {
        wmma::load_matrix_sync(fa, a + tm * 8 * N + k, N);
        wmma::load_matrix_sync(fb, b + tn * 8 * N + k, N);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + tm * 8 * N + tn * 8, fc, N, wmma::mem_row_major);
}

static float bf16_value(__nv_bfloat16 x)
{
    unsigned short u;
    memcpy(&u, &x, 2);
    unsigned w = (unsigned)u << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
}

static float tf32_rna(float x)
{
    unsigned u;
    memcpy(&u, &x, 4);
    u = (u + 0x1000u) & 0xFFFFE000u;
    memcpy(&x, &u, 4);
    return x;
}

template <typename T>
static T *upload(const T *h, size_t n)
{
    T *d;
    CK(cudaMalloc(&d, n * sizeof(T)));
    CK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

static int check(const char *name, int ok)
{
    printf("%s %s\n", name, ok ? "ok" : "FAILED");
    return ok;
}

int main(void)
{
    const int nn = N * N;
    // a[i][k] row-major, bt[j][k] = b[k][j] (B col-major)
    static float fa[N * N], fb[N * N], out[N * N];
    static __nv_bfloat16 ba[N * N], bb[N * N];
    static signed char ia[N * N], ib[N * N];
    static int ic[N * N];
    static double da[N * N], db[N * N], dc[N * N];
    srand(7);
    for (int i = 0; i < nn; i++) {
        fa[i] = (float)(rand() % 2001 - 1000) / 997.0f;
        fb[i] = (float)(rand() % 2001 - 1000) / 991.0f;
        ba[i] = __float2bfloat16(fa[i]);
        bb[i] = __float2bfloat16(fb[i]);
        ia[i] = (signed char)(rand() % 256 - 128);
        ib[i] = (signed char)(rand() % 256 - 128);
        ic[i] = (i % 3 == 0) ? 2147483000 - i : -i;
        da[i] = fa[i];
        db[i] = fb[i] * 1.0000001;
    }
    int all = 1;
    dim3 grid(N / 16 / 2, N / 16), block(64);

    float *dout;
    CK(cudaMalloc(&dout, nn * sizeof(float)));
    bf16_gemm<<<grid, block>>>(upload(ba, nn), upload(bb, nn), dout);
    CK(cudaMemcpy(out, dout, nn * sizeof(float), cudaMemcpyDeviceToHost));
    int ok = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;       // each 16-step is rounded to float as the fragment holds it
            for (int k0 = 0; k0 < N; k0 += 16) {
                double t = s;
                for (int k = k0; k < k0 + 16; k++)
                    t += (double)bf16_value(ba[i * N + k]) * bf16_value(bb[j * N + k]);
                s = (float)t;
            }
            ok &= out[i * N + j] == (float)s;
        }
    all &= check("bf16_wmma", ok);

    tf32_gemm<<<grid, block>>>(upload(fa, nn), upload(fb, nn), dout);
    CK(cudaMemcpy(out, dout, nn * sizeof(float), cudaMemcpyDeviceToHost));
    ok = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k0 = 0; k0 < N; k0 += 8) {
                double t = s;
                for (int k = k0; k < k0 + 8; k++)
                    t += (double)tf32_rna(fa[i * N + k]) * tf32_rna(fb[j * N + k]);
                s = (float)t;
            }
            ok &= out[i * N + j] == (float)s;
        }
    all &= check("tf32_wmma", ok);

    int *dic = upload(ic, nn), got[N * N];
    int8_gemm<<<grid, block>>>(upload(ia, nn), upload(ib, nn), dic);
    CK(cudaMemcpy(got, dic, sizeof got, cudaMemcpyDeviceToHost));
    ok = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            long long s = ic[i * N + j];
            for (int k0 = 0; k0 < N; k0 += 16) {      // saturated after every step
                for (int k = k0; k < k0 + 16; k++)
                    s += (long long)ia[i * N + k] * ib[j * N + k];
                s = s > 2147483647LL ? 2147483647LL : s < -2147483648LL ? -2147483648LL : s;
            }
            ok &= got[i * N + j] == (int)s;
        }
    all &= check("int8_wmma", ok);

    double *ddc;
    CK(cudaMalloc(&ddc, nn * sizeof(double)));
    f64_gemm<<<dim3(N / 8 / 2, N / 8), block>>>(upload(da, nn), upload(db, nn), ddc);
    CK(cudaMemcpy(dc, ddc, nn * sizeof(double), cudaMemcpyDeviceToHost));
    ok = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++)
                s = fma(da[i * N + k], db[j * N + k], s);
            ok &= dc[i * N + j] == s;
        }
    all &= check("f64_wmma", ok);
    CK(cudaDeviceSynchronize());
    return all ? 0 : 1;
}
