// Warp and bit intrinsics without cooperative groups (CUDA samples, SHOC, and the
// warp-aggregated atomics idiom): ballot/any/all, butterfly shuffles, popc/clz/brev/ffs,
// funnel shifts, byte_perm, umulhi, sad, match, and on sm_80 the __reduce_*_sync family.

extern "C" __global__ void warp_vote(const int *in, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    unsigned int ballot = __ballot_sync(0xffffffffu, v > 0);
    int any = __any_sync(0xffffffffu, v > 1000);
    int all = __all_sync(0xffffffffu, v >= -1000);
    unsigned int even = 0;
    if (threadIdx.x & 1)      // a divergent ballot over the odd lanes only
        even = __ballot_sync(0xaaaaaaaau, v & 1);
    int x = v;
    for (int m = 1; m < 32; m <<= 1)
        x = max(x, __shfl_xor_sync(0xffffffffu, x, m));
    int src = __shfl_sync(0xffffffffu, v, (threadIdx.x * 7) & 31);
    int w8 = __shfl_sync(0xffffffffu, v, 0, 8);   // width 8: lane 0 of each group of 8
    if (i < n) {
        out[5 * i + 0] = ballot;
        out[5 * i + 1] = any | (all << 1) | (__popc(ballot) << 2);
        out[5 * i + 2] = even;
        out[5 * i + 3] = x;
        out[5 * i + 4] = src + w8;
    }
}

// Warp-aggregated atomic increment: one atomic per warp, lanes get their slot by popc.
extern "C" __global__ void compact_positive(const int *in, int *out, int *count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    bool keep = i < n && v > 0;
    unsigned int mask = __ballot_sync(0xffffffffu, keep);
    int lane = threadIdx.x & 31;
    int leader = __ffs(mask) - 1;
    int base = 0;
    if (lane == leader)
        base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader < 0 ? 0 : leader);
    if (keep)
        out[base + __popc(mask & ((1u << lane) - 1))] = v;
}

extern "C" __global__ void bit_ops(const unsigned int *a, const unsigned int *b,
                                   const unsigned long long *c, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int x = a[i], y = b[i];
    unsigned long long z = c[i];
    unsigned int *o = out + 12 * i;
    o[0] = __popc(x) + (__clz(x) << 8) + (__ffs(x) << 16);
    o[1] = __brev(x);
    o[2] = __funnelshift_l(x, y, y & 31) ^ __funnelshift_r(x, y, x);
    o[3] = __funnelshift_lc(x, y, y) + __funnelshift_rc(y, x, x);
    o[4] = __byte_perm(x, y, 0x3715);
    o[5] = __umulhi(x, y) ^ (unsigned int)__mulhi((int)x, (int)y);
    o[6] = __sad((int)x, (int)y, 7u) + __usad(x >> 3, y >> 5, 1u);
    o[7] = __popcll(z) + (__clzll(z) << 8) + (__ffsll((long long)z) << 16);
    o[8] = (unsigned int)(__brevll(z) >> 17);
    o[9] = (unsigned int)(__umul64hi(z, (unsigned long long)x * y));
    o[10] = __umul24(x, y) + __mul24((int)y, (int)x);
    o[11] = __uhadd(x, y) ^ __urhadd(x, y) ^ (unsigned int)__hadd((int)x, (int)y);
}

extern "C" __global__ void warp_match(const int *in, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : -1;
    unsigned int any = __match_any_sync(0xffffffffu, v);
    int pred;
    unsigned int all = __match_all_sync(0xffffffffu, v & 0xF0, &pred);
    unsigned int act = __activemask();
    if (i < n) {
        out[3 * i] = any;
        out[3 * i + 1] = all | pred;
        out[3 * i + 2] = act;
    }
}

#if __CUDA_ARCH__ >= 800
#define REDUCE_OK 1
#else
#define REDUCE_OK 0
#endif

// __reduce_*_sync (redux.sync on sm_80, a shuffle loop before).
extern "C" __global__ void warp_reduce_ops(const unsigned int *in, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int v = i < n ? in[i] : 0;
#if REDUCE_OK
    unsigned int s = __reduce_add_sync(0xffffffffu, v);
    unsigned int mn = __reduce_min_sync(0xffffffffu, v);
    unsigned int mx = (unsigned int)__reduce_max_sync(0xffffffffu, (int)v);
    unsigned int orr = __reduce_or_sync(0xffffffffu, v) ^ __reduce_and_sync(0xffffffffu, v) ^
                       __reduce_xor_sync(0xffffffffu, v);
#else
    unsigned int s = v, mn = v, orr = v, an = v, xr = v;
    int mx = (int)v;
    for (int m = 16; m; m >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, m);
        mn = min(mn, __shfl_xor_sync(0xffffffffu, mn, m));
        mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, m));
        orr |= __shfl_xor_sync(0xffffffffu, orr, m);
        an &= __shfl_xor_sync(0xffffffffu, an, m);
        xr ^= __shfl_xor_sync(0xffffffffu, xr, m);
    }
    orr = orr ^ an ^ xr;
#endif
    if (i < n) {
        out[4 * i] = s;
        out[4 * i + 1] = mn;
        out[4 * i + 2] = (unsigned int)mx;
        out[4 * i + 3] = orr;
    }
}

// Block matching as motion estimation writes it with the SIMD video intrinsics: each
// thread scores 8 candidate rows of 16 packed pixels against a reference row by
// __vsadu4 and keeps the best; the per-byte intrinsics of the last candidate are kept too.
extern "C" __global__ void block_match(const unsigned int *ref, const unsigned int *cand,
                                       unsigned int *best, unsigned int *bytes, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const unsigned int *r = ref + 4 * i;
    unsigned int best_sad = 0xffffffffu, best_k = 0;
    for (int k = 0; k < 8; k++) {
        const unsigned int *c = cand + 4 * (i + k);
        unsigned int sad = 0;
        for (int w = 0; w < 4; w++)
            sad += __vsadu4(r[w], c[w]);
        if (sad < best_sad) {
            best_sad = sad;
            best_k = k;
        }
    }
    unsigned int x = r[0], y = cand[4 * (i + 7)];
    best[2 * i] = best_sad;
    best[2 * i + 1] = best_k;
    bytes[6 * i + 0] = __vabsdiffu4(x, y);
    bytes[6 * i + 1] = __vmaxu4(x, y) ^ __vminu4(x, y);
    bytes[6 * i + 2] = __vcmpgtu4(x, y);
    bytes[6 * i + 3] = __vavgu4(x, y);
    bytes[6 * i + 4] = __vadd2(x, y) ^ __vsub4(x, y);
    bytes[6 * i + 5] = __vabsdiffs2(x, y) + __vsads2(x, y);
}
