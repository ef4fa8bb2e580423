// Mipmapped textures through the runtime API, in the shape of CUDA's bindlessTexture sample: a
// uchar4 mipmapped array whose level 0 is copied from the host and whose every further level
// is written by a kernel through a surface over it (reading the level before through another
// surface), then sampled through one texture object over all levels with tex2DLod at
// fractional levels and with tex2DGrad (normalised coordinates, normalised-float reads,
// bilinear filtering, linear mipmap filter, a level bias).  Every level is read back and
// every fetch checked here against a CPU reference of the documented rules (8-bit filter
// and level weights, gdev-py's docs/ptx-engine.md for what CUDA leaves open); prints
// "<part> ok".
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s: %s\n", #x, cudaGetErrorName(e_)); exit(1); } } while (0)
#define EXPECT(c, ...) do { if (!(c)) { printf("FAIL " __VA_ARGS__); exit(1); } } while (0)

static const int W = 64, H = 32, LEVELS = 7, N = 4096;
static const float BIAS = 0.25f;

__global__ void downsample(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h,
                           int sw, int sh)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w || y >= h) return;
    int x0 = min(2 * x, sw - 1), x1 = min(2 * x + 1, sw - 1);
    int y0 = min(2 * y, sh - 1), y1 = min(2 * y + 1, sh - 1);
    uchar4 a = surf2Dread<uchar4>(src, x0 * 4, y0), b = surf2Dread<uchar4>(src, x1 * 4, y0);
    uchar4 c = surf2Dread<uchar4>(src, x0 * 4, y1), d = surf2Dread<uchar4>(src, x1 * 4, y1);
    uchar4 r = make_uchar4((a.x + b.x + c.x + d.x + 2) / 4, (a.y + b.y + c.y + d.y + 2) / 4,
                           (a.z + b.z + c.z + d.z + 2) / 4, (a.w + b.w + c.w + d.w + 2) / 4);
    surf2Dwrite(r, dst, x * 4, y);
}

__global__ void sample_lod(cudaTextureObject_t t, const float4 *q, float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2DLod<float4>(t, q[k].x, q[k].y, q[k].z);
}

__global__ void sample_grad(cudaTextureObject_t t, const float4 *q, const float2 *dy,
                            float4 *out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = tex2DGrad<float4>(t, q[k].x, q[k].y, make_float2(q[k].z, q[k].w),
                                          dy[k]);
}

typedef std::vector<uchar4> Level;
static int lw(int l) { return W >> l ? W >> l : 1; }
static int lh(int l) { return H >> l ? H >> l : 1; }

static float comp(uchar4 v, int c) { return (c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w) / 255.0f; }

static float weight(float x, int *i)          // 8-bit fixed-point fraction of x - 0.5
{
    float xb = x - 0.5f;
    *i = (int)floorf(xb);
    return rintf((xb - (float)*i) * 256.0f) / 256.0f;
}

// bilinear at normalised (u, v) of level l: x wraps, y clamps
static float bilinear(const std::vector<Level> &lv, int l, float u, float v, int c)
{
    int i, j, w = lw(l), h = lh(l);
    float a = weight(u * w, &i), b = weight(v * h, &j), sum = 0;
    for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
            int x = (((i + dx) % w) + w) % w, y = j + dy < 0 ? 0 : j + dy >= h ? h - 1 : j + dy;
            sum += (dx ? a : 1 - a) * (dy ? b : 1 - b) * comp(lv[l][y * w + x], c);
        }
    return sum;
}

static float sample(const std::vector<Level> &lv, float u, float v, float lod, int c)
{
    lod = std::isnan(lod) ? 0.0f : lod;
    lod = fminf(fmaxf(lod + BIAS, 0.0f), (float)(LEVELS - 1));
    int l0 = (int)floorf(lod), l1 = l0 + 1 < LEVELS ? l0 + 1 : l0;
    float f = rintf((lod - (float)l0) * 256.0f) / 256.0f;
    return (1 - f) * bilinear(lv, l0, u, v, c) + f * bilinear(lv, l1, u, v, c);
}

static float grad_lod(float dxu, float dxv, float dyu, float dyv)
{
    float a = dxu * W, b = dxv * H, c = dyu * W, d = dyv * H;
    float r = fmaxf(a * a + b * b, c * c + d * d);
    double lg = r == 0.0f ? -INFINITY : log2((double)r);
    return (float)(nearbyint(lg * 128.0) / 256.0);
}

static void check(const float4 *got, const float *want4, int k, const char *what)
{
    const float g[4] = {got->x, got->y, got->z, got->w};
    for (int c = 0; c < 4; c++)
        EXPECT(fabsf(g[c] - want4[c]) <= 1e-5f, "%s %d.%d: %.7f, expected %.7f\n", what, k, c,
               g[c], want4[c]);
}

static void build_levels(cudaMipmappedArray_t mip, std::vector<Level> &lv)
{
    cudaArray_t prev, cur;
    lv[0].resize(W * H);
    for (int k = 0; k < W * H; k++)
        lv[0][k] = make_uchar4(rand() & 255, rand() & 255, rand() & 255, rand() & 255);
    CHECK(cudaGetMipmappedArrayLevel(&prev, mip, 0));
    CHECK(cudaMemcpy2DToArray(prev, 0, 0, lv[0].data(), W * 4, W * 4, H,
                              cudaMemcpyHostToDevice));
    for (int l = 1; l < LEVELS; l++) {
        cudaSurfaceObject_t s[2];
        cudaResourceDesc rd = {};
        rd.resType = cudaResourceTypeArray;
        CHECK(cudaGetMipmappedArrayLevel(&cur, mip, l));
        rd.res.array.array = prev;
        CHECK(cudaCreateSurfaceObject(&s[0], &rd));
        rd.res.array.array = cur;
        CHECK(cudaCreateSurfaceObject(&s[1], &rd));
        downsample<<<dim3((lw(l) + 31) / 32, lh(l)), 32>>>(s[0], s[1], lw(l), lh(l),
                                                            lw(l - 1), lh(l - 1));
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());     // as bindlessTexture: the kernel is done with them
        CHECK(cudaDestroySurfaceObject(s[0]));
        CHECK(cudaDestroySurfaceObject(s[1]));
        lv[l].resize(lw(l) * lh(l));
        for (int y = 0; y < lh(l); y++)
            for (int x = 0; x < lw(l); x++) {
                const Level &p = lv[l - 1];
                int pw = lw(l - 1), ph = lh(l - 1);
                int x0 = std::min(2 * x, pw - 1), x1 = std::min(2 * x + 1, pw - 1);
                int y0 = std::min(2 * y, ph - 1), y1 = std::min(2 * y + 1, ph - 1);
                uchar4 a = p[y0 * pw + x0], b = p[y0 * pw + x1], c = p[y1 * pw + x0],
                       d = p[y1 * pw + x1];
                lv[l][y * lw(l) + x] = make_uchar4((a.x + b.x + c.x + d.x + 2) / 4,
                                                   (a.y + b.y + c.y + d.y + 2) / 4,
                                                   (a.z + b.z + c.z + d.z + 2) / 4,
                                                   (a.w + b.w + c.w + d.w + 2) / 4);
            }
        prev = cur;
    }
}

static void check_levels(cudaMipmappedArray_t mip, const std::vector<Level> &lv)
{
    for (int l = 0; l < LEVELS; l++) {
        cudaArray_t a;
        cudaExtent e;
        cudaChannelFormatDesc d;
        unsigned flags;
        CHECK(cudaGetMipmappedArrayLevel(&a, mip, l));
        CHECK(cudaArrayGetInfo(&d, &e, &flags, a));
        EXPECT(e.width == (size_t)lw(l) && e.height == (size_t)lh(l) && e.depth == 0 &&
               d.x == 8 && d.w == 8, "level %d is %zux%zux%zu\n", l, e.width, e.height,
               e.depth);
        Level back(lw(l) * lh(l));
        CHECK(cudaMemcpy2DFromArray(back.data(), lw(l) * 4, a, 0, 0, lw(l) * 4, lh(l),
                                    cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < back.size(); k++)
            EXPECT(back[k].x == lv[l][k].x && back[k].y == lv[l][k].y &&
                   back[k].z == lv[l][k].z && back[k].w == lv[l][k].w,
                   "level %d texel %zu\n", l, k);
    }
    printf("levels ok\n");
}

static cudaTextureObject_t make_texture(cudaMipmappedArray_t mip)
{
    cudaResourceDesc rd = {};
    cudaTextureDesc td = {}, back;
    cudaTextureObject_t t;
    rd.resType = cudaResourceTypeMipmappedArray;
    rd.res.mipmap.mipmap = mip;
    td.normalizedCoords = 1;
    td.filterMode = cudaFilterModeLinear;
    td.mipmapFilterMode = cudaFilterModeLinear;
    td.addressMode[0] = cudaAddressModeWrap;
    td.addressMode[1] = cudaAddressModeClamp;
    td.maxAnisotropy = 4;
    td.mipmapLevelBias = BIAS;
    td.minMipmapLevelClamp = 0;
    td.maxMipmapLevelClamp = (float)(LEVELS - 1);
    td.readMode = cudaReadModeNormalizedFloat;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, NULL));
    CHECK(cudaGetTextureObjectTextureDesc(&back, t));
    EXPECT(back.mipmapFilterMode == cudaFilterModeLinear && back.mipmapLevelBias == BIAS &&
           back.maxMipmapLevelClamp == LEVELS - 1, "texture descriptor round trip\n");
    return t;
}

static void sample_all(cudaTextureObject_t t, const std::vector<Level> &lv)
{
    std::vector<float4> q(N), out(N);
    std::vector<float2> dy(N);
    float4 *dq, *dout;
    float2 *ddy;
    for (int k = 0; k < N; k++) {
        float u = rand() / (float)RAND_MAX * 2.0f - 0.5f, v = rand() / (float)RAND_MAX * 1.4f - 0.2f;
        float lod = k % 8 == 0 ? (float)(k / 8 % 9) - 1.0f : rand() / (float)RAND_MAX * 8.0f - 1.0f;
        q[k] = make_float4(u, v, lod, 0);
    }
    CHECK(cudaMalloc(&dq, N * sizeof(float4)));
    CHECK(cudaMalloc(&dout, N * sizeof(float4)));
    CHECK(cudaMalloc(&ddy, N * sizeof(float2)));
    CHECK(cudaMemcpy(dq, q.data(), N * sizeof(float4), cudaMemcpyHostToDevice));
    sample_lod<<<N / 128, 128>>>(t, dq, dout, N);
    CHECK(cudaMemcpy(out.data(), dout, N * sizeof(float4), cudaMemcpyDeviceToHost));
    for (int k = 0; k < N; k++) {
        float want[4];
        for (int c = 0; c < 4; c++)
            want[c] = sample(lv, q[k].x, q[k].y, q[k].z, c);
        check(&out[k], want, k, "tex2DLod");
    }
    printf("tex2DLod ok\n");
    for (int k = 0; k < N; k++) {
        float s = powf(2.0f, rand() / (float)RAND_MAX * 9.0f - 8.0f);
        q[k].z = (rand() / (float)RAND_MAX - 0.5f) * s;
        q[k].w = (rand() / (float)RAND_MAX - 0.5f) * s;
        dy[k] = make_float2((rand() / (float)RAND_MAX - 0.5f) * s,
                            (rand() / (float)RAND_MAX - 0.5f) * s);
    }
    CHECK(cudaMemcpy(dq, q.data(), N * sizeof(float4), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(ddy, dy.data(), N * sizeof(float2), cudaMemcpyHostToDevice));
    sample_grad<<<N / 128, 128>>>(t, dq, ddy, dout, N);
    CHECK(cudaMemcpy(out.data(), dout, N * sizeof(float4), cudaMemcpyDeviceToHost));
    for (int k = 0; k < N; k++) {
        float want[4], lod = grad_lod(q[k].z, q[k].w, dy[k].x, dy[k].y);
        for (int c = 0; c < 4; c++)
            want[c] = sample(lv, q[k].x, q[k].y, lod, c);
        check(&out[k], want, k, "tex2DGrad");
    }
    printf("tex2DGrad ok\n");
    CHECK(cudaFree(dq));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(ddy));
}

int main()
{
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<uchar4>();
    cudaMipmappedArray_t mip, bad;
    cudaArray_t level;
    std::vector<Level> lv(LEVELS);
    srand(12);
    EXPECT(cudaMallocMipmappedArray(&bad, &desc, make_cudaExtent(W, H, 0), LEVELS + 1, 0) ==
           cudaErrorInvalidValue, "more levels than the size allows\n");
    cudaGetLastError();
    CHECK(cudaMallocMipmappedArray(&mip, &desc, make_cudaExtent(W, H, 0), LEVELS,
                                   cudaArraySurfaceLoadStore));
    EXPECT(cudaGetMipmappedArrayLevel(&level, mip, LEVELS) == cudaErrorInvalidValue,
           "level past the last\n");
    cudaGetLastError();
    build_levels(mip, lv);
    CHECK(cudaDeviceSynchronize());
    check_levels(mip, lv);
    cudaTextureObject_t t = make_texture(mip);
    sample_all(t, lv);
    CHECK(cudaGetMipmappedArrayLevel(&level, mip, 2));
    EXPECT(cudaFreeArray(level) != cudaSuccess, "a level freed on its own\n");
    cudaGetLastError();
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeMipmappedArray(mip));
    EXPECT(cudaFreeMipmappedArray(mip) != cudaSuccess, "a second free\n");
    cudaGetLastError();
    EXPECT(cudaGetMipmappedArrayLevel(&level, mip, 0) != cudaSuccess, "a freed one's level\n");
    cudaGetLastError();
    printf("mipmap_app ok\n");
    return 0;
}
