// 3D, layered and cubemap textures and surfaces through the runtime API, in the shape of
// CUDA's simpleTexture3D (a uchar volume in a 3D array, trilinear filtering of normalised
// reads with normalised coordinates and wrap), simpleLayeredTexture (a 2D layered array,
// each layer sampled and transformed) and simpleCubemapTexture (every texel of every face
// read back through its direction), plus 1D layers, a layered cubemap, surf3D/surf2DLayered/
// surfCubemap writes and cudaMemcpy3D boxes.  Every value is checked here against a CPU
// reference of CUDA's documented sampling (9-bit filter weights); prints "<part> ok".
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s: %s\n", #x, cudaGetErrorName(e_)); exit(1); } } while (0)
#define EXPECT(c, ...) do { if (!(c)) { printf("FAIL " __VA_ARGS__); exit(1); } } while (0)

// the whole of array a (w x h x d elements of es bytes) from (up) or to packed host memory
static void whole(cudaArray_t a, void *host, size_t es, int w, int h, int d, int up)
{
    cudaMemcpy3DParms p = {};
    cudaPitchedPtr ptr = make_cudaPitchedPtr(host, w * es, w, h);
    if (up) {
        p.srcPtr = ptr;
        p.dstArray = a;
    } else {
        p.srcArray = a;
        p.dstPtr = ptr;
    }
    p.extent = make_cudaExtent(w, h, d);
    p.kind = up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
}

// ---- simpleTexture3D ---------------------------------------------------------------------

__global__ void render3d(cudaTextureObject_t t, float *out, int w, int h, float z)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w) out[y * w + x] = tex3D<float>(t, x * 0.093f - 0.41f, y * 0.137f + 0.05f, z);
}

static float weight9(float x, int *i)          // 9-bit fixed-point fraction of x - 0.5
{
    float xb = x - 0.5f;
    *i = (int)floorf(xb);
    return rintf((xb - (float)*i) * 256.0f) / 256.0f;
}

static int wrap(int i, int n) { return ((i % n) + n) % n; }

static float ref3d(const unsigned char *v, int W, int H, int D, float u, float s, float r)
{
    int i, j, k;
    float a = weight9(u * W, &i), b = weight9(s * H, &j), c = weight9(r * D, &k), sum = 0;
    for (int dz = 0; dz < 2; dz++)
        for (int dy = 0; dy < 2; dy++)
            for (int dx = 0; dx < 2; dx++) {
                float wgt = (dx ? a : 1 - a) * (dy ? b : 1 - b) * (dz ? c : 1 - c);
                int at = (wrap(k + dz, D) * H + wrap(j + dy, H)) * W + wrap(i + dx, W);
                sum += wgt * (v[at] / 255.0f);
            }
    return sum;
}

static void volume(void)
{
    const int W = 16, H = 12, D = 8, OW = 24, OH = 10;
    unsigned char vol[D][H][W], back[D][H][W];
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                vol[z][y][x] = (unsigned char)((x * 37 + y * 11 + z * 53) % 256);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t arr;
    CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W, H, D)));
    whole(arr, vol, 1, W, H, D, 1);
    cudaExtent e;
    unsigned flags;
    CHECK(cudaArrayGetInfo(NULL, &e, &flags, arr));
    EXPECT(e.width == W && e.height == H && e.depth == D && flags == 0, "array info\n");
    memset(back, 0, sizeof back);                 // the volume back, whole
    whole(arr, back, 1, W, H, D, 0);
    EXPECT(!memcmp(vol, back, sizeof vol), "3D copy back\n");

    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaTextureDesc td = {};
    td.normalizedCoords = 1;
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeWrap;
    td.readMode = cudaReadModeNormalizedFloat;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &rd, &td, NULL));
    float *d_out, out[OH * OW];
    CHECK(cudaMalloc(&d_out, sizeof out));
    for (float z = -0.3f; z < 1.2f; z += 0.173f) {
        render3d<<<dim3(1, OH), 32>>>(tex, d_out, OW, OH, z);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
        for (int y = 0; y < OH; y++)
            for (int x = 0; x < OW; x++) {
                float want = ref3d(&vol[0][0][0], W, H, D, x * 0.093f - 0.41f,
                                   y * 0.137f + 0.05f, z);
                EXPECT(fabsf(out[y * OW + x] - want) <= 2e-6f, "volume (%d,%d,%g): %a != %a\n",
                       x, y, z, out[y * OW + x], want);
            }
    }
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFree(d_out));
    CHECK(cudaFreeArray(arr));
    printf("volume ok\n");
}

// ---- simpleLayeredTexture ----------------------------------------------------------------

__global__ void transform_layers(cudaTextureObject_t t, float *out, int w, int h, int layer)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    float u = (x + 0.5f) / (float)w, v = (y + 0.5f) / (float)h;
    if (x < w) out[layer * w * h + y * w + x] = -tex2DLayered<float>(t, u, v, layer) + layer;
}

__global__ void layers1d(cudaTextureObject_t t, float *out, int w, int nl)
{
    int x = threadIdx.x, l = blockIdx.x;      // layers -1 .. nl: clamped at both ends
    if (x < w) out[l * w + x] = tex1DLayered<float>(t, x + 0.5f, l - 1);
    (void)nl;
}

static void layered(void)
{
    const int W = 8, H = 8, L = 5;
    static float img[L][H][W], out[L][H][W];
    for (int l = 0; l < L; l++)
        for (int i = 0; i < H * W; i++)
            img[l][i / W][i % W] = (float)(i + l * 100) * 0.5f;
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W, H, L), cudaArrayLayered));
    whole(arr, img, sizeof(float), W, H, L, 1);
    unsigned flags;
    cudaExtent e;
    CHECK(cudaArrayGetInfo(NULL, &e, &flags, arr));
    EXPECT(e.depth == L && flags == cudaArrayLayered, "layered info\n");
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaTextureDesc td = {};
    td.normalizedCoords = 1;
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &rd, &td, NULL));
    float *d_out;
    CHECK(cudaMalloc(&d_out, sizeof out));
    for (int l = 0; l < L; l++)
        transform_layers<<<dim3(1, H), W>>>(tex, d_out, W, H, l);
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    for (int l = 0; l < L; l++)
        for (int i = 0; i < H * W; i++)
            EXPECT(out[l][i / W][i % W] == -img[l][i / W][i % W] + l, "layer %d texel %d\n", l,
                   i);
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFreeArray(arr));

    const int W1 = 16, L1 = 3;                 // 1D layers: height 0
    float row[L1][W1], got[L1 + 2][W1];
    for (int l = 0; l < L1; l++)
        for (int x = 0; x < W1; x++)
            row[l][x] = (float)(l * 1000 + x);
    CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W1, 0, L1), cudaArrayLayered));
    whole(arr, row, sizeof(float), W1, 1, L1, 1);
    rd.res.array.array = arr;
    td = cudaTextureDesc{};
    td.filterMode = cudaFilterModePoint;
    td.addressMode[0] = cudaAddressModeClamp;
    CHECK(cudaCreateTextureObject(&tex, &rd, &td, NULL));
    layers1d<<<L1 + 2, W1>>>(tex, d_out, W1, L1);
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    for (int l = 0; l < L1 + 2; l++)
        for (int x = 0; x < W1; x++) {
            int want = l - 1 < 0 ? 0 : l - 1 >= L1 ? L1 - 1 : l - 1;
            EXPECT(got[l][x] == row[want][x], "1D layer %d x %d: %g\n", l - 1, x, got[l][x]);
        }
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFreeArray(arr));
    CHECK(cudaFree(d_out));
    printf("layered ok\n");
}

// ---- simpleCubemapTexture ----------------------------------------------------------------

// the direction through texel (x, y) of face f (the sample's mapping), u, v in (-1, 1)
__device__ float3 direction(int f, int x, int y, int w)
{
    float u = ((x + 0.5f) / (float)w) * 2.0f - 1.0f, v = ((y + 0.5f) / (float)w) * 2.0f - 1.0f;
    switch (f) {
    case 0: return make_float3(1, -v, -u);
    case 1: return make_float3(-1, -v, u);
    case 2: return make_float3(u, 1, v);
    case 3: return make_float3(u, -1, -v);
    case 4: return make_float3(u, -v, 1);
    default: return make_float3(-u, -v, -1);
    }
}

__global__ void transform_cube(cudaTextureObject_t t, float *out, int w, int layer, int layered)
{
    int x = threadIdx.x, y = blockIdx.x, f = blockIdx.y;
    float3 d = direction(f, x, y, w);
    float v = layered ? texCubemapLayered<float>(t, d.x, d.y, d.z, layer)
                      : texCubemap<float>(t, d.x, d.y, d.z);
    out[(f * w + y) * w + x] = -v + f;
}

static void cubemap_pass(cudaArray_t arr, const float *faces, int W, int layers)
{
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaTextureDesc td = {};
    td.normalizedCoords = 1;
    td.filterMode = cudaFilterModeLinear;
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeWrap;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &rd, &td, NULL));
    float *d_out, *out = (float *)malloc(6 * W * W * sizeof(float));
    CHECK(cudaMalloc(&d_out, 6 * W * W * sizeof(float)));
    for (int l = 0; l < (layers ? layers : 1); l++) {
        transform_cube<<<dim3(W, 6), W>>>(tex, d_out, W, l, layers > 0);
        CHECK(cudaMemcpy(out, d_out, 6 * W * W * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < 6 * W * W; i++)
            EXPECT(out[i] == -faces[l * 6 * W * W + i] + i / (W * W), "cubemap layer %d "
                   "face %d texel %d: %g\n", l, i / (W * W), i % (W * W), out[i]);
    }
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFree(d_out));
    free(out);
}

static void cubemaps(void)
{
    const int W = 8, NL = 2;
    static float faces[NL * 6][W][W];
    for (int s = 0; s < NL * 6; s++)
        for (int i = 0; i < W * W; i++)
            faces[s][i / W][i % W] = (float)(s * 100 + i);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    EXPECT(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W, W + 1, 6), cudaArrayCubemap) ==
           cudaErrorInvalidValue, "a cubemap of oblong faces\n");
    cudaGetLastError();
    for (int layered = 0; layered < 2; layered++) {
        int depth = layered ? 6 * NL : 6;
        CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W, W, depth),
                                cudaArrayCubemap | (layered ? cudaArrayLayered : 0)));
        whole(arr, faces, sizeof(float), W, W, depth, 1);
        cubemap_pass(arr, &faces[0][0][0], W, layered ? NL : 0);
        CHECK(cudaFreeArray(arr));
    }
    printf("cubemap ok\n");
}

// ---- surfaces and copies of boxes ---------------------------------------------------------

__global__ void fill3d(cudaSurfaceObject_t s, int w, int h, int d)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < w && y < h && z < d) {
        float v = surf3Dread<float>(s, x * 4, y, z);
        surf3Dwrite(v * 2.0f + (float)(x + 10 * y + 100 * z), s, x * 4, y, z);
    }
}

__global__ void fill_layers(cudaSurfaceObject_t s, int w, int h)
{
    int x = threadIdx.x, y = blockIdx.x, l = blockIdx.y;
    int v = surf2DLayeredread<int>(s, x * 4, y, l);
    surf2DLayeredwrite(v + 1000 * l, s, x * 4, y, l);
    (void)w, (void)h;
}

__global__ void fill_faces(cudaSurfaceObject_t s, int w)
{
    int x = threadIdx.x, y = blockIdx.x, f = blockIdx.y;
    surfCubemapwrite((float)(f * 1000 + y * w + x), s, x * 4, y, f);
}

static void surfaces(void)
{
    const int W = 6, H = 5, D = 4;
    static float vol[D][H][W], back[D][H][W];
    for (int i = 0; i < D * H * W; i++)
        (&vol[0][0][0])[i] = (float)i * 0.25f;
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(W, H, D), cudaArraySurfaceLoadStore));
    whole(arr, vol, sizeof(float), W, H, D, 1);
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaSurfaceObject_t s;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    fill3d<<<dim3(H, D), W>>>(s, W, H, D);
    CHECK(cudaGetLastError());
    // a box: slices 1..2, rows 1..3, columns 2..4 of the array into a packed host box
    float box[2][3][3];
    cudaMemcpy3DParms q = {};
    q.srcArray = arr;
    q.srcPos = make_cudaPos(2, 1, 1);
    q.dstPtr = make_cudaPitchedPtr(box, 3 * sizeof(float), 3, 3);
    q.extent = make_cudaExtent(3, 3, 2);
    q.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&q));
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                EXPECT(box[z][y][x] == vol[z + 1][y + 1][x + 2] * 2 + (x + 2) + 10 * (y + 1) +
                       100 * (z + 1), "box %d %d %d\n", x, y, z);
    whole(arr, back, sizeof(float), W, H, D, 0);
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                EXPECT(back[z][y][x] == vol[z][y][x] * 2 + x + 10 * y + 100 * z, "surf3D\n");
    q.srcPos = make_cudaPos(0, 0, 2);              // slices 2..4 of 4: refused
    q.dstPtr = make_cudaPitchedPtr(back, W * sizeof(float), W, H);
    q.extent = make_cudaExtent(W, H, 3);
    EXPECT(cudaMemcpy3D(&q) == cudaErrorInvalidValue, "a box past the last slice\n");
    cudaGetLastError();
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(arr));

    int lay[3][H][W], lback[3][H][W];
    for (int i = 0; i < 3 * H * W; i++)
        (&lay[0][0][0])[i] = i;
    cudaChannelFormatDesc ci = cudaCreateChannelDesc<int>();
    CHECK(cudaMalloc3DArray(&arr, &ci, make_cudaExtent(W, H, 3),
                            cudaArrayLayered | cudaArraySurfaceLoadStore));
    whole(arr, lay, sizeof(int), W, H, 3, 1);
    rd.res.array.array = arr;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    fill_layers<<<dim3(H, 3), W>>>(s, W, H);
    whole(arr, lback, sizeof(int), W, H, 3, 0);
    for (int i = 0; i < 3 * H * W; i++)
        EXPECT((&lback[0][0][0])[i] == i + 1000 * (i / (H * W)), "surf2DLayered %d\n", i);
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(arr));

    float faces[6][4][4];
    CHECK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(4, 4, 6),
                            cudaArrayCubemap | cudaArraySurfaceLoadStore));
    rd.res.array.array = arr;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    fill_faces<<<dim3(4, 6), 4>>>(s, 4);
    whole(arr, faces, sizeof(float), 4, 4, 6, 0);
    for (int i = 0; i < 96; i++)
        EXPECT((&faces[0][0][0])[i] == (float)(i / 16 * 1000 + i % 16), "surfCubemap %d\n", i);
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(arr));
    printf("surfaces ok\n");
}

int main(void)
{
    volume();
    layered();
    cubemaps();
    surfaces();
    printf("tex3d_app ok\n");
    return 0;
}
