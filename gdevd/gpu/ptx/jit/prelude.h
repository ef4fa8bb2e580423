/*
 * prelude.h - the run-time support every compiled kernel includes.
 *
 * A compiled kernel runs the blocks [block, block_end) of a launch one after another, the
 * threads of a block as lanes: each register is an array over the block's lanes, each
 * instruction a loop over the active lanes.  All execution state lives in struct jctx and
 * the buffers it points to (program counters, registers, shared/local/param memory), which
 * the Python side owns, so a run can stop after any basic block and resume exactly.
 *
 * Global memory goes through the context's page table (mmu_internal.h) behind a small
 * direct-mapped software TLB; the caller of K_run holds the page table's read lock for the
 * whole call, and the TLB is flushed at every call (mappings may change between calls).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mmu_internal.h"
#include "approx.h"
#include "bits.h"
#include "half.h"

#define PC_EXIT (1 << 30)
#define WAIT (1 << 29)
#define TLB_SIZE 256
/* arrays a power-of-two of pages apart must not share TLB slots */
#define TLB_SLOT(page) ((unsigned)((page) ^ ((page) >> 8) ^ ((page) >> 16)) & (TLB_SIZE - 1))
#define FAIRNESS_PERIOD 64

enum { F_UNMAPPED = 1, F_MISALIGNED, F_PROTECTION, F_OOB_SHARED, F_OOB_LOCAL, F_OOB_PARAM,
       F_PARAM_RO, F_TRAP };

struct jctx {
	struct gdev_mmu *mmu;
	uint8_t *params, *shared, *local, *pvars, *regs, *cc;
	uint64_t *xa;	/* per lane: a memory access's address, then its host pointer - xb */
	uint8_t *xb;	/* any fixed host address (the shared buffer): xa's origin */
	int32_t *pc, *act, *tid_x, *tid_y, *tid_z, *iota;	/* iota[i] = i */
	uint64_t param_size, shared_size, local_size, lo_stride, pv_stride, reg_stride;
	uint64_t data_base, block, block_end, block_step, instructions, thread_instructions, fault_va;
	uint32_t ntid[3], nctaid[3], ctaid[3];
	int32_t nt, upc, nlive, nact, act_ok, started, fault_line, fault_kind;
	uint32_t divsteps, dyn_shared;
	uint64_t tlb_tag[TLB_SIZE];
	uint8_t *tlb_base[TLB_SIZE];
	uint8_t tlb_acc[TLB_SIZE];
};

#define U2F(x) __extension__({ uint32_t u_ = (x); float f_; memcpy(&f_, &u_, 4); f_; })
#define F2U(x) __extension__({ float f_ = (x); uint32_t u_; memcpy(&u_, &f_, 4); u_; })
#define U2D(x) __extension__({ uint64_t u_ = (x); double f_; memcpy(&f_, &u_, 8); f_; })
#define D2U(x) __extension__({ double f_ = (x); uint64_t u_; memcpy(&u_, &f_, 8); u_; })
/* f16 values: computed on as float, rounded once (to nearest) from the double value */
#define H2F(x) __extension__({ uint16_t h_ = (x); _Float16 f_; memcpy(&f_, &h_, 2); (float)f_; })
#define F2H(x) __extension__({ _Float16 f_ = (_Float16)(double)(x); uint16_t h_; \
	memcpy(&h_, &f_, 2); h_; })

/* what a faulting lane of a load checked in its loop reads instead (lanes.py) */
static uint8_t jit_pad[64] __attribute__((unused));

static inline uint8_t *fault(struct jctx *c, uint64_t va, int kind)
{
	c->fault_va = va;
	c->fault_kind = kind;
	return 0;
}

static uint8_t *g_slow(struct jctx *c, uint64_t va, int acc)
{
	uint64_t pte, page = va >> GDEV_PAGE_SHIFT;
	unsigned slot = TLB_SLOT(page);

	if (va >= VA_LIMIT)
		return fault(c, va, F_UNMAPPED);
	pte = pte_of(c->mmu, va);
	if (!(pte & PTE_VALID))
		return fault(c, va, F_UNMAPPED);
	if ((pte & (uint64_t)acc) != (uint64_t)acc)
		return fault(c, va, F_PROTECTION);
	c->tlb_tag[slot] = page;
	c->tlb_acc[slot] = pte & PTE_ACC;
	c->tlb_base[slot] = c->mmu->ap[(pte >> PTE_AP_SHIFT) & PTE_AP_MASK].base + (pte & ~PAGE_MASK);
	return c->tlb_base[slot] + (va & PAGE_MASK);
}

/* host pointer of an aligned global access, or NULL with the fault recorded */
static inline uint8_t *gptr(struct jctx *c, uint64_t va, uint64_t align, int acc)
{
	uint64_t page = va >> GDEV_PAGE_SHIFT;
	unsigned slot = TLB_SLOT(page);

	if (va & (align - 1))
		return fault(c, va, F_MISALIGNED);
	if (c->tlb_tag[slot] == page && (c->tlb_acc[slot] & acc) == acc)
		return c->tlb_base[slot] + (va & PAGE_MASK);
	return g_slow(c, va, acc);
}

static inline uint8_t *sptr(struct jctx *c, uint64_t off, uint64_t align, uint64_t size)
{
	if (off & (align - 1))
		return fault(c, off, F_MISALIGNED);
	if (off + size > c->shared_size || off + size < off)
		return fault(c, off, F_OOB_SHARED);
	return c->shared + off;
}

static inline uint8_t *lptr(struct jctx *c, uint64_t off, uint64_t align, uint64_t size, int i)
{
	if (off & (align - 1))
		return fault(c, off, F_MISALIGNED);
	if (off + size > c->local_size || off + size < off)
		return fault(c, off, F_OOB_LOCAL);
	return c->local + (uint64_t)i * c->lo_stride + off;
}

static inline uint8_t *pptr(struct jctx *c, uint64_t off, uint64_t align, uint64_t size, int acc)
{
	if (acc & GDEV_ACC_WRITE)
		return fault(c, off, F_PARAM_RO);
	if (off & (align - 1))
		return fault(c, off, F_MISALIGNED);
	if (off + size > c->param_size || off + size < off)
		return fault(c, off, F_OOB_PARAM);
	return c->params + off;
}

/* a generic address: global below 1 << 48, then the shared, local and param windows */
static inline uint8_t *vptr(struct jctx *c, uint64_t va, uint64_t align, uint64_t size,
			    int acc, int i)
{
	switch (va >> 48) {
	case 0: return gptr(c, va, align, acc);
	case 1: return sptr(c, va - (1ull << 48), align, size);
	case 2: return lptr(c, va - (2ull << 48), align, size, i);
	case 4: return pptr(c, va - (4ull << 48), align, size, acc);
	default: return fault(c, va, F_UNMAPPED);
	}
}

/* state spaces of xlate() (const is global) */
enum { SP_GLOBAL = 0, SP_SHARED = 1, SP_LOCAL = 2, SP_PARAM = 4, SP_GENERIC = 5 };
#define XCHUNK 16

/* host pointer of one lane's access in `space` (NULL with the fault recorded) */
static inline uint8_t *ptr_of(struct jctx *c, int space, uint64_t va, uint64_t align,
			      uint64_t size, int acc, int i)
{
	switch (space) {
	case SP_GLOBAL: return gptr(c, va, align, acc);
	case SP_SHARED: return sptr(c, va, align, size);
	case SP_LOCAL: return lptr(c, va, align, size, i);
	case SP_PARAM: return pptr(c, va, align, size, acc);
	default: return vptr(c, va, align, size, acc, i);
	}
}

/*
 * The offset *d that turns every address of a chunk of lanes (lowest lo, highest hi, all
 * addresses or-ed in orr) into its host pointer, when one check covers them all: aligned,
 * one page of global memory or inside the shared/local buffer.  *per_lane is set when
 * lane i must also add i * lo_stride (local memory).  0 = check each lane on its own.
 */
static int chunk_delta(struct jctx *c, int space, uint64_t lo, uint64_t hi, uint64_t orr,
		       uint64_t align, uint64_t size, int acc, uint64_t *d, int *per_lane)
{
	uint8_t *p;

	if (orr & (align - 1))
		return 0;
	if (space == SP_GENERIC) {
		uint64_t w = lo >> 48;
		if (w != hi >> 48 || w > 2)
			return 0;
		*d = -(w << 48);
		space = (int)w;
		lo -= w << 48;
		hi -= w << 48;
	} else {
		*d = 0;
	}
	switch (space) {
	case SP_GLOBAL:
		if (lo >> GDEV_PAGE_SHIFT != hi >> GDEV_PAGE_SHIFT || hi >= VA_LIMIT)
			return 0;
		p = gptr(c, lo, align, acc);
		*d += (uint64_t)(uintptr_t)p - lo;
		return p != 0;
	case SP_SHARED:
		if (hi + size > c->shared_size || hi + size < hi)
			return 0;
		*d += (uint64_t)(uintptr_t)c->shared;
		return 1;
	case SP_LOCAL:
		if (hi + size > c->local_size || hi + size < hi)
			return 0;
		*per_lane = 1;
		*d += (uint64_t)(uintptr_t)c->local;
		return 1;
	default:
		return 0;
	}
}

/*
 * Translate c->xa[i] (the address of lane i's access) into its host pointer minus c->xb,
 * for every active lane, in chunks of XCHUNK lanes: one check and one page-table lookup
 * per chunk when they cover it, else lane by lane in lane order (so the first faulting lane
 * is the one reported, as the interpreter does).  Returns -1 with the fault recorded, 1 if
 * all lanes are active and each chunk's addresses are consecutive elements of `size` bytes
 * (the access may then use vector loads and stores, see CLOOP), else 0.
 */
static inline __attribute__((always_inline)) int xlate_lanes(
	struct jctx *c, const int32_t *restrict lanes, int cnt, int space, uint64_t align,
	uint64_t size, int acc)
{
#define LANE(k) (lanes ? lanes[k] : (k))
	uint64_t *restrict xa = c->xa;
	const uint64_t xb = (uint64_t)(uintptr_t)c->xb;
	int dense = !lanes;

	for (int k0 = 0; k0 < cnt; k0 += XCHUNK) {
		const int k1 = k0 + XCHUNK < cnt ? k0 + XCHUNK : cnt;
		uint64_t lo = ~0ull, hi = 0, orr = 0, gap = 0, d = 0;
		const uint64_t first = xa[LANE(k0)];
		int per_lane = 0, ok;
		for (int k = k0; k < k1; k++) {
			uint64_t v = xa[LANE(k)];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
			orr |= v;
			gap |= v ^ (first + (uint64_t)(k - k0) * size);
		}
		ok = chunk_delta(c, space, lo, hi, orr, align, size, acc, &d, &per_lane);
		d -= xb;
		dense &= ok && !per_lane && !gap;
		if (ok && !per_lane) {
			for (int k = k0; k < k1; k++)
				xa[LANE(k)] += d;
		} else if (ok) {
			for (int k = k0; k < k1; k++)
				xa[LANE(k)] += d + (uint64_t)LANE(k) * c->lo_stride;
		} else {
			for (int k = k0; k < k1; k++) {
				const int i = LANE(k);
				uint8_t *p = ptr_of(c, space, xa[i], align, size, acc, i);
				if (!p)
					return -1;
				xa[i] = (uint64_t)(uintptr_t)p - xb;
			}
		}
	}
	return dense;
#undef LANE
}

static int xlate(struct jctx *c, int full, int na, int space, uint64_t align, uint64_t size,
		 int acc)
{
	if (full)
		return xlate_lanes(c, 0, c->nt, space, align, size, acc);
	return xlate_lanes(c, c->act, na, space, align, size, acc);
}

static inline float ftzf(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
static inline float satf(float x) { return isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline double satd(double x) { return isnan(x) ? 0.0 : x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x; }

/* float -> integer as cvt does: round first (by the caller), saturate, NaN -> 0 */
#define F2I(name, T, lo, hi) \
	static inline T name(double r) { \
		if (isnan(r)) return 0; \
		if (r >= (double)(hi) + 1.0) return (T)(hi); \
		if (r < (double)(lo)) return (T)(lo); \
		return (T)r; }
F2I(f2s8, int8_t, INT8_MIN, INT8_MAX)
F2I(f2s16, int16_t, INT16_MIN, INT16_MAX)
F2I(f2s32, int32_t, INT32_MIN, INT32_MAX)
F2I(f2s64, int64_t, INT64_MIN, INT64_MAX)
F2I(f2u8, uint8_t, 0, UINT8_MAX)
F2I(f2u16, uint16_t, 0, UINT16_MAX)
F2I(f2u32, uint32_t, 0, UINT32_MAX)
F2I(f2u64, uint64_t, 0, UINT64_MAX)

/* round a double to float in a directed mode (the double is the exact result or close) */
static inline float rnd_f32(double x, int mode)
{
	float r = (float)x;

	if (mode == 1 && fabs((double)r) > fabs(x)) return nextafterf(r, 0.0f);
	if (mode == 2 && (double)r > x) return nextafterf(r, -INFINITY);
	if (mode == 3 && (double)r < x) return nextafterf(r, INFINITY);
	return r;
}

static inline uint32_t prmt_default(uint32_t a, uint32_t b, uint32_t c)
{
	uint64_t src = (uint64_t)a | ((uint64_t)b << 32);
	uint32_t out = 0;

	for (int k = 0; k < 4; k++) {
		uint32_t sel = (c >> (4 * k)) & 15;
		uint32_t byte = (src >> ((sel & 7) * 8)) & 0xFF;
		if (sel & 8)
			byte = (byte >> 7) * 0xFF;
		out |= byte << (8 * k);
	}
	return out;
}

/* block start: fresh program counters and per-block memory (the kernel zeroes the
   registers a lane may read before writing) */
static void block_init(struct jctx *c)
{
	uint64_t b = c->block;

	memset(c->cc, 0, (uint64_t)c->nt);
	memset(c->pc, 0, sizeof(int32_t) * (uint64_t)c->nt);
	if (c->shared_size) memset(c->shared, 0, c->shared_size);
	if (c->local_size) memset(c->local, 0, c->lo_stride * (uint64_t)c->nt);
	if (c->pv_stride) memset(c->pvars, 0, c->pv_stride * (uint64_t)c->nt);
	c->ctaid[0] = b % c->nctaid[0];
	c->ctaid[1] = (b / c->nctaid[0]) % c->nctaid[1];
	c->ctaid[2] = b / ((uint64_t)c->nctaid[0] * c->nctaid[1]);
	c->upc = 0;
	c->nlive = c->nt;
	c->act_ok = 0;
	c->started = 1;
}

/* min-PC scheduling as the interpreter does it (see executor.py); -1 when the block ended */
static int32_t pick(struct jctx *c)
{
	int32_t *pcs = c->pc, m = PC_EXIT, n = c->nt, k = 0;

	for (int i = 0; i < n; i++)
		m = pcs[i] < m ? pcs[i] : m;
	if (m >= PC_EXIT)
		return -1;
	if (m >= WAIT) {
		for (int i = 0; i < n; i++)
			if (pcs[i] < PC_EXIT)
				pcs[i] -= WAIT;
		m -= WAIT;
	}
	if (++c->divsteps % FAIRNESS_PERIOD == 0) {
		int32_t hi = -1;
		for (int i = 0; i < n; i++)
			hi = pcs[i] < WAIT && pcs[i] > hi ? pcs[i] : hi;
		m = hi >= 0 ? hi : m;
	}
	for (int i = 0; i < n; i++)
		if (pcs[i] == m)
			c->act[k++] = i;
	c->nact = k;
	if (k == c->nlive) {
		c->upc = m;
		c->act_ok = 1;
	}
	return m;
}

/* the live lanes of a uniform block (some exited) */
static void live_lanes(struct jctx *c)
{
	int k = 0;

	for (int i = 0; i < c->nt; i++)
		if (c->pc[i] < PC_EXIT)
			c->act[k++] = i;
	c->nact = k;
	c->act_ok = 1;
}

/* the active lanes: all (a loop to vectorize) or those listed in act (a scalar loop: the
   empty asm hides its counter from the vectorizer, which would only spend compile time) */
#define LOOP(...) \
	do { if (full) { for (int i = 0; i < n; i++) { __VA_ARGS__ } } \
	     else { for (int k_ = 0; k_ < na; k_++) { const int i = act[k_]; __VA_ARGS__ \
						       __asm__("" : "+r"(k_)); } } } \
	while (0)
/* all lanes, chunk by chunk, p_ = lane i's host pointer when xlate() returned 1 */
#define CLOOP(sz, ...) \
	for (int k0_ = 0; k0_ < n; k0_ += XCHUNK) { \
		uint8_t *const q_ = xb + xa[k0_] - (uint64_t)k0_ * (sz); \
		const int k1_ = k0_ + XCHUNK < n ? k0_ + XCHUNK : n; \
		for (int i = k0_; i < k1_; i++) { uint8_t *p_ = q_ + (uint64_t)i * (sz); __VA_ARGS__ } }
/* one loop over the active lanes (less code than LOOP; for long blocks, not vectorized) */
#define LOOP1(...) \
	do { const int32_t *const l_ = full ? c->iota : act; const int m_ = full ? n : na; \
	     for (int k_ = 0; k_ < m_; k_++) { const int i = l_[k_]; __VA_ARGS__ \
					       __asm__("" : "+r"(k_)); } } while (0)
#define FAULT(line) do { c->fault_line = (line); return -1; } while (0)
