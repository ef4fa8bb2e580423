// mma.sync, ldmatrix, stmatrix and movmatrix as public kernels write them (inline PTX, the
// ISA's per-lane fragment layouts), one warp each.  Built by: nvcc -arch=sm_90 -ptx (see
// tests/ptx/test_mma_sync.py).  g = lane >> 2, t = lane & 3 throughout.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

__device__ uint32_t pack16(const uint16_t *p, int lo, int hi)
{
    return (uint32_t)p[lo] | ((uint32_t)p[hi] << 16);
}

// D (16x8 f32) = A (16x16 f16, row-major) * B (16x8, given as B^T 8x16 row-major) + C,
// A and B through ldmatrix from shared memory, B either way (trans: B row-major 16x8)
extern "C" __global__ void hmma_ldmatrix(const uint16_t *a, const uint16_t *bt,
                                         const uint16_t *b, const float *c, float *d)
{
    __shared__ __align__(16) uint16_t sa[16 * 16], sbt[8 * 16], sb[16 * 8];
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    for (int i = lane; i < 256; i += 32) sa[i] = a[i];
    for (int i = lane; i < 128; i += 32) { sbt[i] = bt[i]; sb[i] = b[i]; }
    __syncwarp();
    uint32_t ra[4], rb[2], rbt[2];
    uint32_t pa = (uint32_t)__cvta_generic_to_shared(&sa[(lane % 16) * 16 + (lane / 16) * 8]);
    uint32_t pb = (uint32_t)__cvta_generic_to_shared(&sbt[(lane % 8) * 16 + ((lane / 8) % 2) * 8]);
    uint32_t pt = (uint32_t)__cvta_generic_to_shared(&sb[(lane % 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(ra[0]), "=r"(ra[1]), "=r"(ra[2]), "=r"(ra[3]) : "r"(pa));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(rb[0]), "=r"(rb[1]) : "r"(pb));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(rbt[0]), "=r"(rbt[1]) : "r"(pt));
    float acc[4], acc2[4];
    for (int i = 0; i < 4; i++) acc[i] = acc2[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc2[0]), "+f"(acc2[1]), "+f"(acc2[2]), "+f"(acc2[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rbt[0]), "r"(rbt[1]));
    for (int i = 0; i < 4; i++) {
        d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
        d[128 + (g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc2[i];
    }
}

// bf16 m16n8k16 and f16 m16n8k8 (f16 accumulator) with fragments loaded per lane
extern "C" __global__ void hmma_direct(const uint16_t *a, const uint16_t *bt, const float *c,
                                       const uint16_t *c16, float *d, uint16_t *d16)
{
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    uint32_t ra[4], rb[2];
    for (int r = 0; r < 4; r++) {     // a(2r), a(2r+1): row g + 8*(r&1), col 2t + 8*(r>>1)
        int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
        ra[r] = pack16(a, row * 16 + col, row * 16 + col + 1);
    }
    for (int r = 0; r < 2; r++)       // b(2r), b(2r+1): k = 2t + 8r (+1), n = g
        rb[r] = pack16(bt, g * 16 + 2 * t + 8 * r, g * 16 + 2 * t + 8 * r + 1);
    float acc[4];
    for (int i = 0; i < 4; i++) acc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
    // m16n8k8 f16: A 16x8 (first 8 columns of a), B 8x8 (first 8 k of bt)
    uint32_t sa[2], sb, sc[2], sd[2];
    for (int r = 0; r < 2; r++) {
        int row = g + 8 * r;
        sa[r] = pack16(a, row * 16 + 2 * t, row * 16 + 2 * t + 1);
        sc[r] = pack16(c16, row * 8 + 2 * t, row * 8 + 2 * t + 1);
    }
    sb = pack16(bt, g * 16 + 2 * t, g * 16 + 2 * t + 1);
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, "
                 "{%5, %6};" : "=r"(sd[0]), "=r"(sd[1])
                 : "r"(sa[0]), "r"(sa[1]), "r"(sb), "r"(sc[0]), "r"(sc[1]));
    for (int r = 0; r < 2; r++) {
        d16[(g + 8 * r) * 8 + 2 * t] = (uint16_t)sd[r];
        d16[(g + 8 * r) * 8 + 2 * t + 1] = (uint16_t)(sd[r] >> 16);
    }
}

// tf32 m16n8k8: A 16x8 row-major f32 bits, B^T 8x8
extern "C" __global__ void tf32_mma(const uint32_t *a, const uint32_t *bt, const float *c,
                                    float *d)
{
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    uint32_t ra[4], rb[2];
    for (int i = 0; i < 4; i++) ra[i] = a[(g + 8 * (i & 1)) * 8 + t + 4 * (i >> 1)];
    for (int i = 0; i < 2; i++) rb[i] = bt[g * 8 + t + 4 * i];
    float acc[4];
    for (int i = 0; i < 4; i++) acc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
}

// s8 x u8 m16n8k32 with saturation: A 16x32 s8, B^T 8x32 u8, C/D s32
extern "C" __global__ void imma(const int8_t *a, const uint8_t *bt, const int *c, int *d)
{
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    uint32_t ra[4], rb[2];
    for (int r = 0; r < 4; r++) {     // bytes 4r..4r+3: row g + 8*(r&1), col 4t + 16*(r>>1)
        const uint8_t *p = (const uint8_t *)a + (g + 8 * (r & 1)) * 32 + 4 * t + 16 * (r >> 1);
        ra[r] = p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
    }
    for (int r = 0; r < 2; r++) {     // k = 4t + 16r .. +3, n = g
        const uint8_t *p = bt + g * 32 + 4 * t + 16 * r;
        rb[r] = p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
    }
    int acc[4];
    for (int i = 0; i < 4; i++) acc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
}

// f64 m8n8k4: A 8x4, B^T 8x4, C/D 8x8
extern "C" __global__ void dmma(const double *a, const double *bt, const double *c, double *d)
{
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    double ra = a[g * 4 + t], rb = bt[g * 4 + t], acc[2] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1]};
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(acc[0]), "+d"(acc[1]) : "d"(ra), "d"(rb));
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
}

// movmatrix: the 8x8 b16 matrix m, held in fragments, transposed; stmatrix (sm_90) stores
// the transposed fragments back to shared memory as matrix 0 and m itself as matrix 1
extern "C" __global__ void move_store(const uint16_t *m, uint16_t *out)
{
    __shared__ __align__(16) uint16_t s[2 * 64];
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    uint32_t r = pack16(m, g * 8 + 2 * t, g * 8 + 2 * t + 1), rt;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(rt) : "r"(r));
    out[g * 8 + 2 * t] = (uint16_t)rt;
    out[g * 8 + 2 * t + 1] = (uint16_t)(rt >> 16);
    uint32_t p = (uint32_t)__cvta_generic_to_shared(&s[(lane % 16) * 8]);
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};"
                 :: "r"(p), "r"(rt), "r"(r));
    __syncwarp();
    for (int i = lane; i < 128; i += 32) out[64 + i] = s[i];
}
