// tex2Dgather through the runtime API: a float2 cudaArray made for gathers
// (cudaArrayTextureGather) with unnormalised coordinates, clamp and border modes, every
// component (a missing one reads 0, alpha 1); an int pitch-2D texture read as elements with
// normalised coordinates and wrap; a uchar4 array read as normalised floats.  Each gather is
// checked here against a CPU reference of the 2x2 footprint that bilinear filtering would
// blend, in CUDA's order (i, j+1), (i+1, j+1), (i+1, j), (i, j); prints "<part> ok".
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s: %s\n", #x, cudaGetErrorName(e_)); exit(1); } } while (0)
#define EXPECT(c, ...) do { if (!(c)) { printf("FAIL " __VA_ARGS__); exit(1); } } while (0)

static const int W = 13, H = 7, N = 2048;
static const int TAPS[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};

template <typename T>
__global__ void gather(cudaTextureObject_t t, const float2 *q, T *out, int comp, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    switch (comp) {
    case 0: out[k] = tex2Dgather<T>(t, q[k].x, q[k].y, 0); break;
    case 1: out[k] = tex2Dgather<T>(t, q[k].x, q[k].y, 1); break;
    case 2: out[k] = tex2Dgather<T>(t, q[k].x, q[k].y, 2); break;
    default: out[k] = tex2Dgather<T>(t, q[k].x, q[k].y, 3); break;
    }
}

// the footprint's texel indices of coordinate x (already in texels)
static int base(float x) { return (int)floorf(x - 0.5f); }

// index i of n under mode: 0 wrap, 1 clamp, 3 border (-1)
static int address(int i, int n, int mode)
{
    if (mode == 0) return ((i % n) + n) % n;
    if (mode == 3 && (i < 0 || i >= n)) return -1;
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

static std::vector<float2> queries(float lo, float hi)
{
    std::vector<float2> q(N);
    for (int k = 0; k < N; k++)
        q[k] = make_float2(lo + (hi - lo) * rand() / (float)RAND_MAX,
                           lo + (hi - lo) * rand() / (float)RAND_MAX);
    for (int k = 0; k < 64; k++)          // texel centres and edges
        q[k] = make_float2(k % 16 * 0.5f, k / 16 * 0.5f);
    return q;
}

template <typename T>
static std::vector<T> run(cudaTextureObject_t t, const std::vector<float2> &q, int comp)
{
    float2 *dq;
    T *dout;
    std::vector<T> out(N);
    CHECK(cudaMalloc(&dq, N * sizeof(float2)));
    CHECK(cudaMalloc(&dout, N * sizeof(T)));
    CHECK(cudaMemcpy(dq, q.data(), N * sizeof(float2), cudaMemcpyHostToDevice));
    gather<T><<<N / 128, 128>>>(t, dq, dout, comp, N);
    CHECK(cudaMemcpy(out.data(), dout, N * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dq));
    CHECK(cudaFree(dout));
    return out;
}

static void float_array()
{
    std::vector<float2> img(W * H);
    for (int k = 0; k < W * H; k++)
        img[k] = make_float2(k * 0.5f - 3.0f, 100.0f + k);
    cudaChannelFormatDesc d = cudaCreateChannelDesc<float2>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &d, W, H, cudaArrayTextureGather));
    CHECK(cudaMemcpy2DToArray(a, 0, 0, img.data(), W * 8, W * 8, H, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = cudaAddressModeClamp;
    td.addressMode[1] = cudaAddressModeBorder;
    td.borderColor[1] = -7.0f;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, NULL));
    std::vector<float2> q = queries(-2.0f, W + 2.0f);
    for (int comp = 0; comp < 4; comp++) {
        std::vector<float4> out = run<float4>(t, q, comp);
        for (int k = 0; k < N; k++) {
            const float got[4] = {out[k].x, out[k].y, out[k].z, out[k].w};
            for (int p = 0; p < 4; p++) {
                int x = address(base(q[k].x) + TAPS[p][0], W, 1);
                int y = address(base(q[k].y) + TAPS[p][1], H, 3);
                float want = y < 0 ? (comp == 1 ? -7.0f : 0.0f)    // the border colour
                             : comp == 3 ? 1.0f : comp == 2 ? 0.0f
                             : comp ? img[y * W + x].y : img[y * W + x].x;
                EXPECT(got[p] == want, "float2 comp %d query %d tap %d: %g, expected %g\n",
                       comp, k, p, got[p], want);
            }
        }
    }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    printf("float array ok\n");
}

static void int_pitch()
{
    size_t pitch;
    int *dev;
    std::vector<int> img(W * H);
    for (int k = 0; k < W * H; k++)
        img[k] = k * 37 - 1000;
    CHECK(cudaMallocPitch(&dev, &pitch, W * sizeof(int), H));
    CHECK(cudaMemcpy2D(dev, pitch, img.data(), W * sizeof(int), W * sizeof(int), H,
                       cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypePitch2D;
    rd.res.pitch2D.devPtr = dev;
    rd.res.pitch2D.desc = cudaCreateChannelDesc<int>();
    rd.res.pitch2D.width = W;
    rd.res.pitch2D.height = H;
    rd.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
    td.normalizedCoords = 1;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, NULL));
    std::vector<float2> q = queries(-1.5f, 2.5f);
    std::vector<int4> out = run<int4>(t, q, 0);
    for (int k = 0; k < N; k++) {
        const int got[4] = {out[k].x, out[k].y, out[k].z, out[k].w};
        for (int p = 0; p < 4; p++) {
            int x = address(base(q[k].x * W) + TAPS[p][0], W, 0);
            int y = address(base(q[k].y * H) + TAPS[p][1], H, 0);
            EXPECT(got[p] == img[y * W + x], "int query %d tap %d: %d, expected %d\n", k, p,
                   got[p], img[y * W + x]);
        }
    }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFree(dev));
    printf("int pitch ok\n");
}

static void byte_array()
{
    std::vector<uchar4> img(W * H);
    for (int k = 0; k < W * H; k++)
        img[k] = make_uchar4(k, 255 - k, k * 3, 7);
    cudaChannelFormatDesc d = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &d, W, H, cudaArrayTextureGather));
    CHECK(cudaMemcpy2DToArray(a, 0, 0, img.data(), W * 4, W * 4, H, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.readMode = cudaReadModeNormalizedFloat;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, NULL));
    std::vector<float2> q = queries(-2.0f, W + 2.0f);
    std::vector<float4> out = run<float4>(t, q, 2);
    for (int k = 0; k < N; k++) {
        const float got[4] = {out[k].x, out[k].y, out[k].z, out[k].w};
        for (int p = 0; p < 4; p++) {
            int x = address(base(q[k].x) + TAPS[p][0], W, 1);
            int y = address(base(q[k].y) + TAPS[p][1], H, 1);
            float want = img[y * W + x].z / 255.0f;
            EXPECT(got[p] == want, "uchar4 query %d tap %d: %g, expected %g\n", k, p,
                   got[p], want);
        }
    }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(a));
    printf("byte array ok\n");
}

int main()
{
    srand(5);
    float_array();
    int_pitch();
    byte_array();
    printf("gather_app ok\n");
    return 0;
}
