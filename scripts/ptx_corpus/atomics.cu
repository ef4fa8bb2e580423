// Survey corpus: atomics of every kind on global and shared memory, scoped variants, and
// cache-hinted loads/stores.
extern "C" __global__ void atomics_global(int *i32, unsigned int *u32, unsigned long long *u64,
                                          long long *s64, float *f32, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomicAdd(&i32[0], i);
    atomicSub(&i32[1], 2);
    atomicExch(&i32[2], i);
    atomicMin(&i32[3], -i);
    atomicMax(&i32[4], i);
    atomicAnd(&i32[5], ~i);
    atomicOr(&i32[6], i);
    atomicXor(&i32[7], i);
    atomicCAS(&i32[8], i, i + 1);
    atomicAdd(&u32[0], 1u);
    atomicInc(&u32[1], 100u);
    atomicDec(&u32[2], 100u);
    atomicMin(&u32[3], (unsigned)i);
    atomicMax(&u32[4], (unsigned)i);
    atomicCAS(&u32[5], 0u, (unsigned)i);
    atomicExch(&u32[6], (unsigned)i);
    atomicAdd(&u64[0], 1ull);
    atomicCAS(&u64[1], 0ull, (unsigned long long)i);
    atomicExch(&u64[2], (unsigned long long)i);
    atomicMin(&u64[3], (unsigned long long)i);
    atomicMax(&u64[4], (unsigned long long)i);
    atomicAnd(&u64[5], (unsigned long long)i);
    atomicOr(&u64[6], (unsigned long long)i);
    atomicXor(&u64[7], (unsigned long long)i);
    atomicMin(&s64[0], (long long)-i);
    atomicMax(&s64[1], (long long)i);
    atomicAdd(&f32[0], 0.5f);
    atomicExch(&f32[1], (float)i);
    atomicAdd_block(&i32[9], 1);
    atomicAdd_system(&i32[10], 1);
    atomicCAS_block(&i32[11], 0, 1);
    int old = atomicAdd(&i32[12], 1);
    if (old == 0)
        u32[7] = 1;
}

extern "C" __global__ void atomics_shared(const unsigned int *in, unsigned int *out, int n)
{
    __shared__ unsigned int s_u32[8];
    __shared__ unsigned long long s_u64[4];
    __shared__ float s_f32[2];
    if (threadIdx.x < 8)
        s_u32[threadIdx.x] = 0;
    if (threadIdx.x < 4)
        s_u64[threadIdx.x] = 0;
    if (threadIdx.x < 2)
        s_f32[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int v = i < n ? in[i] : 0;
    atomicAdd(&s_u32[0], v);
    atomicMin(&s_u32[1], v);
    atomicMax(&s_u32[2], v);
    atomicInc(&s_u32[3], 15u);
    atomicCAS(&s_u32[4], 0u, v);
    atomicOr(&s_u32[5], v);
    atomicExch(&s_u32[6], v);
    atomicAdd(&s_u64[0], (unsigned long long)v);
    atomicCAS(&s_u64[1], 0ull, (unsigned long long)v);
    atomicAdd(&s_f32[0], (float)v);
    __syncthreads();
    if (threadIdx.x < 8)
        out[blockIdx.x * 16 + threadIdx.x] = s_u32[threadIdx.x] + (unsigned)s_u64[threadIdx.x & 3] +
                                             (unsigned)s_f32[threadIdx.x & 1];
}

extern "C" __global__ void cache_hints(const float4 *in, float4 *out, const int *__restrict__ r,
                                       int *w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 a = __ldg(&in[i]);
    float4 b = __ldcg(&in[i]);
    float4 c = __ldcs(&in[i]);
    float4 d = __ldlu(&in[i]);
    float4 e = __ldcv(&in[i]);
    __stcs(&out[i], make_float4(a.x + b.y, c.z, d.w, e.x));
    __stwb(&w[i], r[i] + __ldg(&r[n - 1 - i]));
    __stcg(&w[i + n], 1);
    __stwt(&w[i + 2 * n], 2);
    volatile int *vw = w;
    vw[i + 3 * n] = vw[i] + 1;
}
