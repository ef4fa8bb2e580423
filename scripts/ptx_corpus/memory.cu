// Survey corpus: memory spaces and access shapes: vectors, narrow types, structs, generic
// pointers, device globals with initializers, constant arrays, dynamic and static shared,
// texture objects, memcpy/memset in device code.
__device__ int g_counter = 5;
__device__ float g_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ float c_coeffs[16];
__constant__ int c_init[4] = {7, 8, 9, 10};

struct rec { char c; short s; int i; long long l; float f; double d; };

extern "C" __global__ void vector_access(const float2 *f2, const float4 *f4, const int4 *i4,
                                         const double2 *d2, const char4 *c4, const short2 *s2,
                                         const uchar2 *u2, float4 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float2 a = f2[i];
    float4 b = f4[i];
    int4 c = i4[i];
    double2 d = d2[i];
    char4 e = c4[i];
    short2 s = s2[i];
    uchar2 u = u2[i];
    out[i] = make_float4(a.x + b.y + c_coeffs[i & 15], a.y + (float)c.z + g_table[i & 3],
                         (float)(d.x + d.y) + e.x + e.w + s.y, (float)(u.x + u.y + c_init[i & 3]));
    atomicAdd(&g_counter, 1);
}

extern "C" __global__ void struct_access(const struct rec *in, struct rec *out,
                                         unsigned char *bytes, unsigned short *halves, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    struct rec r = in[i];
    r.c += 1;
    r.s = (short)(r.s * 3);
    r.l += r.i;
    r.d += r.f;
    out[i] = r;
    bytes[i] = (unsigned char)(bytes[i] + r.c);
    halves[i] = (unsigned short)(halves[i] ^ r.s);
    signed char sc = (signed char)bytes[n - 1 - i];
    short ss = (short)halves[n - 1 - i];
    out[i].i = sc + ss;
}

__device__ __noinline__ float generic_sum(const float *p, int n)
{
    float s = 0;
    for (int k = 0; k < n; k++)
        s += p[k];
    return s;
}

extern "C" __global__ void spaces(const float *in, float *out, int n)
{
    extern __shared__ float dyn[];
    __shared__ double stat[64];
    __shared__ char bytes[64];
    float local[8];
    int t = threadIdx.x;
    dyn[t] = in[blockIdx.x * blockDim.x + t];
    if (t < 64) {
        stat[t] = in[t] * 2.0;
        bytes[t] = (char)t;
    }
    for (int k = 0; k < 8; k++)
        local[k] = in[(t + k) % n];
    __syncthreads();
    float s = generic_sum(dyn, blockDim.x) + generic_sum(in, 4) + generic_sum(local, 8);
    const float *p = (t & 1) ? dyn : in;
    s += p[t] + (float)stat[t & 63] + bytes[(t * 7) & 63];
    s += __isShared(p) ? 1.0f : 0.0f;
    s += __isGlobal(p) ? 2.0f : 0.0f;
    struct rec r;
    memset(&r, 0, sizeof r);
    r.f = s;
    struct rec r2;
    memcpy(&r2, &r, sizeof r);
    out[blockIdx.x * blockDim.x + t] = r2.f;
}

extern "C" __global__ void textures(cudaTextureObject_t t1, cudaTextureObject_t t2,
                                    cudaSurfaceObject_t surf, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = tex1Dfetch<float>(t1, i);
    float b = tex2D<float>(t2, i + 0.5f, 0.5f);
    float c;
    surf2Dread(&c, surf, i * 4, 0);
    out[i] = a + b + c;
}
