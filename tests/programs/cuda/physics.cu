// Floating-point applications: n-body with float4 tiles and rsqrtf (CUDA samples'
// nbody), Black-Scholes with the polynomial CND and with erfcf/normcdff, Mandelbrot's
// divergent escape loops on a 2D grid, and a double-precision Julia set.

__device__ float3 body_interaction(float4 bi, float4 bj, float3 ai, float soft2)
{
    float3 r;
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;
    float d2 = r.x * r.x + r.y * r.y + r.z * r.z + soft2;
    float inv = rsqrtf(d2);
    float s = bj.w * inv * inv * inv;
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z += r.z * s;
    return ai;
}

extern "C" __global__ void nbody_step(const float4 *pos, float4 *newpos, float4 *vel, int n,
                                      float dt, float damping, float soft2)
{
    extern __shared__ float4 tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    float3 acc = {0.f, 0.f, 0.f};
    for (int t = 0; t < (n + blockDim.x - 1) / blockDim.x; t++) {
        int j = t * blockDim.x + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < blockDim.x; k++)
            acc = body_interaction(me, tile[k], acc, soft2);
        __syncthreads();
    }
    if (i < n) {
        float4 v = vel[i];
        v.x = (v.x + acc.x * dt) * damping;
        v.y = (v.y + acc.y * dt) * damping;
        v.z = (v.z + acc.z * dt) * damping;
        me.x += v.x * dt;
        me.y += v.y * dt;
        me.z += v.z * dt;
        newpos[i] = me;
        vel[i] = v;
    }
}

#define A1 0.31938153f
#define A2 -0.356563782f
#define A3 1.781477937f
#define A4 -1.821255978f
#define A5 1.330274429f
#define RSQRT2PI 0.39894228040143267793994605993438f

__device__ inline float cnd_poly(float d)
{
    float K = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = RSQRT2PI * __expf(-0.5f * d * d) *
              (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    return d > 0 ? 1.0f - c : c;
}

extern "C" __global__ void black_scholes(float *call, float *put, const float *S, const float *X,
                                         const float *T, float R, float V, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float s = S[i], x = X[i], t = T[i];
        float sqrtT = sqrtf(t);
        float d1 = (logf(s / x) + (R + 0.5f * V * V) * t) / (V * sqrtT);
        float d2 = d1 - V * sqrtT;
        float c1 = cnd_poly(d1), c2 = cnd_poly(d2);
        float e = expf(-R * t);
        call[i] = s * c1 - x * e * c2;
        put[i] = x * e * (1.0f - c2) - s * (1.0f - c1);
    }
}

// The same with the math library's normal CDF (erfcf inside) and double-precision output.
extern "C" __global__ void black_scholes_erf(double *call, const float *S, const float *X,
                                             const float *T, float R, float V, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = S[i], x = X[i], t = T[i];
        float vst = V * sqrtf(t);
        float d1 = (log1pf(s / x - 1.0f) + (R + 0.5f * V * V) * t) / vst;
        float d2 = d1 - vst;
        float n1 = normcdff(d1), n2 = 0.5f * erfcf(-d2 * 0.70710678f);
        call[i] = (double)s * n1 - (double)x * exp(-(double)R * t) * n2;
    }
}

extern "C" __global__ void mandelbrot(int *iters, int w, int h, float x0, float y0, float dx,
                                      float dy, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h)
        return;
    float cx = x0 + px * dx, cy = y0 + py * dy;
    float x = 0.f, y = 0.f;
    int k = 0;
    while (k < max_iter && x * x + y * y <= 4.0f) {
        float xt = x * x - y * y + cx;
        y = 2.0f * x * y + cy;
        x = xt;
        k++;
    }
    iters[py * w + px] = k;
}

extern "C" __global__ void julia_double(unsigned char *img, int w, int h, double cr, double ci,
                                        double scale)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px < w && py < h) {
        double zr = scale * (double)(w / 2 - px) / (w / 2);
        double zi = scale * (double)(h / 2 - py) / (h / 2);
        int k = 0;
        for (; k < 200; k++) {
            double t = zr * zr - zi * zi + cr;
            zi = 2.0 * zr * zi + ci;
            zr = t;
            if (zr * zr + zi * zi > 1000.0)
                break;
        }
        img[py * w + px] = (unsigned char)k;
    }
}
