// Kernels written the way public CUDA suites write them (CUDA samples, GPU Gems, Rodinia).
#define TILE 16

// CUDA samples matrixMul: C = A * B, shared-memory tiles, wA = hA = wB = multiple of TILE.
extern "C" __global__ void matrixMul(float *C, const float *A, const float *B, int wA, int wB) {
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * TILE * by, aEnd = aBegin + wA - 1, aStep = TILE;
    int bBegin = TILE * bx, bStep = TILE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[TILE][TILE];
        __shared__ float Bs[TILE][TILE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) Csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    int c = wB * TILE * by + TILE * bx;
    C[c + wB * ty + tx] = Csub;
}

// CUDA samples reduce6-style: grid-stride accumulation, shared tree, warp-synchronous tail.
template <unsigned blockSize>
__device__ void warpReduce(volatile int *s, unsigned tid) {
    if (blockSize >= 64) s[tid] += s[tid + 32];
    if (blockSize >= 32) s[tid] += s[tid + 16];
    if (blockSize >= 16) s[tid] += s[tid + 8];
    if (blockSize >= 8) s[tid] += s[tid + 4];
    if (blockSize >= 4) s[tid] += s[tid + 2];
    if (blockSize >= 2) s[tid] += s[tid + 1];
}
extern "C" __global__ void reduce6(const int *g_idata, int *g_odata, unsigned n) {
    const unsigned blockSize = 256;
    __shared__ int sdata[256];
    unsigned tid = threadIdx.x, i = blockIdx.x * (blockSize * 2) + tid;
    unsigned gridSize = blockSize * 2 * gridDim.x;
    int sum = 0;
    while (i < n) { sum += g_idata[i]; if (i + blockSize < n) sum += g_idata[i + blockSize]; i += gridSize; }
    sdata[tid] = sum;
    __syncthreads();
    if (tid < 128) sdata[tid] += sdata[tid + 128];
    __syncthreads();
    if (tid < 64) sdata[tid] += sdata[tid + 64];
    __syncthreads();
    if (tid < 32) warpReduce<blockSize>(sdata, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// GPU Gems 3 ch. 39 work-efficient exclusive scan of 2*blockDim elements.
extern "C" __global__ void prescan(float *g_odata, const float *g_idata, int n) {
    extern __shared__ float temp[];
    int thid = threadIdx.x, offset = 1;
    temp[2 * thid] = g_idata[2 * thid];
    temp[2 * thid + 1] = g_idata[2 * thid + 1];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (thid == 0) temp[n - 1] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            float t = temp[ai]; temp[ai] = temp[bi]; temp[bi] += t;
        }
    }
    __syncthreads();
    g_odata[2 * thid] = temp[2 * thid];
    g_odata[2 * thid + 1] = temp[2 * thid + 1];
}

// CUDA samples bitonic sort of one block in shared memory (ascending).
extern "C" __global__ void bitonicSort(unsigned *values) {
    extern __shared__ unsigned shared[];
    const unsigned tid = threadIdx.x;
    shared[tid] = values[tid];
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k *= 2) {
        for (unsigned j = k / 2; j > 0; j /= 2) {
            unsigned ixj = tid ^ j;
            if (ixj > tid) {
                if ((tid & k) == 0) {
                    if (shared[tid] > shared[ixj]) { unsigned t = shared[tid]; shared[tid] = shared[ixj]; shared[ixj] = t; }
                } else {
                    if (shared[tid] < shared[ixj]) { unsigned t = shared[tid]; shared[tid] = shared[ixj]; shared[ixj] = t; }
                }
            }
            __syncthreads();
        }
    }
    values[tid] = shared[tid];
}

// CUDA samples BlackScholes (one option per thread).
__device__ inline float cndGPU(float d) {
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f,
                A5 = 1.330274429f, RSQRT2PI = 0.39894228040143267793994605993438f;
    float K = __fdividef(1.0f, (1.0f + 0.2316419f * fabsf(d)));
    float cnd = RSQRT2PI * __expf(-0.5f * d * d) *
                (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    if (d > 0) cnd = 1.0f - cnd;
    return cnd;
}
extern "C" __global__ void BlackScholesGPU(float2 *d_CallResult, float2 *d_PutResult,
                                           const float2 *d_StockPrice, const float2 *d_OptionStrike,
                                           const float2 *d_OptionYears, float Riskfree,
                                           float Volatility, int optN) {
    const int opt = blockDim.x * blockIdx.x + threadIdx.x;
    if (opt < optN / 2) {
        float2 S = d_StockPrice[opt], X = d_OptionStrike[opt], T = d_OptionYears[opt];
        float2 call, put;
        for (int h = 0; h < 2; ++h) {
            float s = h ? S.y : S.x, x = h ? X.y : X.x, t = h ? T.y : T.x;
            float sqrtT = __fdividef(1.0F, rsqrtf(t));
            float d1 = __fdividef(__logf(s / x) + (Riskfree + 0.5f * Volatility * Volatility) * t,
                                  Volatility * sqrtT);
            float d2 = d1 - Volatility * sqrtT;
            float CNDD1 = cndGPU(d1), CNDD2 = cndGPU(d2);
            float expRT = __expf(-Riskfree * t);
            float c = s * CNDD1 - x * expRT * CNDD2;
            float p = x * expRT * (1.0f - CNDD2) - s * (1.0f - CNDD1);
            if (h) { call.y = c; put.y = p; } else { call.x = c; put.x = p; }
        }
        d_CallResult[opt] = call;
        d_PutResult[opt] = put;
    }
}

// CUDA samples nbody tile calculation (float4 positions, rsqrtf, shared tiles).
extern "C" __global__ void nbody(const float4 *pos, float4 *acc, int n, float soft2) {
    extern __shared__ float4 sh[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = pos[i];
    float3 a = {0, 0, 0};
    for (int tile = 0; tile < n / blockDim.x; ++tile) {
        sh[threadIdx.x] = pos[tile * blockDim.x + threadIdx.x];
        __syncthreads();
        for (int j = 0; j < blockDim.x; ++j) {
            float4 o = sh[j];
            float3 r = {o.x - me.x, o.y - me.y, o.z - me.z};
            float d2 = r.x * r.x + r.y * r.y + r.z * r.z + soft2;
            float inv = rsqrtf(d2);
            float s = o.w * inv * inv * inv;
            a.x += r.x * s; a.y += r.y * s; a.z += r.z * s;
        }
        __syncthreads();
    }
    acc[i] = make_float4(a.x, a.y, a.z, 0.0f);
}
