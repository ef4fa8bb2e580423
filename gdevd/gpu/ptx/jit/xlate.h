/*
 * xlate.h - memory accesses of compiled kernels: the host pointer of an address in each
 * state space, with the interpreter's faults, and the translation of a whole instruction's
 * addresses (xlate).  Included by prelude.h, which defines struct jctx.
 *
 * Global memory goes through the context's page table (mmu_internal.h) behind a small
 * direct-mapped software TLB per slot; the caller of K_run holds the page table's read
 * lock for the whole call, and the TLB is flushed at every call (mappings may change
 * between calls).
 */

static inline uint8_t *fault(struct jctx *c, uint64_t va, int kind)
{
	c->fault_va = va;
	c->fault_kind = kind;
	return 0;
}

/* host pointer of an aligned global access, or NULL with the fault recorded */
static inline uint8_t *gptr(struct jctx *c, uint64_t va, uint64_t align, int acc)
{
	uint64_t page = va >> GDEV_PAGE_SHIFT;
	unsigned slot = TLB_SLOT(page);

	if (va & (align - 1))
		return fault(c, va, F_MISALIGNED);
	if (c->tlb->tag[slot] == page && (c->tlb->acc[slot] & acc) == acc)
		return c->tlb->base[slot] + (va & PAGE_MASK);
	return c->rt->g_slow(c, va, acc);
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
static inline __attribute__((always_inline)) int chunk_delta(struct jctx *c, int space, uint64_t lo, uint64_t hi, uint64_t orr,
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
 * Translating a memory instruction's addresses.  c->xa[i] holds the address of lane i's
 * access; xlate() turns it into the host pointer minus c->xb, chunk of XCHUNK lanes by
 * chunk: one alignment and bounds check and one TLB probe per chunk when they cover it,
 * else lane by lane in lane order (so the first faulting lane is the one reported, as the
 * interpreter does).  Returns -1 with the fault recorded, 1 when the access is *dense*
 * (all lanes active and each chunk's addresses consecutive elements of `size` bytes: the
 * access may use vector loads and stores, see CLOOP), else 0.
 *
 * Invariant of a dense result: only the first lane of each chunk is translated (CLOOP
 * reads nothing else); every other result has every active lane's entry translated.
 */

/* 1 if the len addresses at x are consecutive elements of size bytes */
static inline __attribute__((always_inline)) int chunk_run(const uint64_t *restrict x, int len,
							   uint64_t size)
{
	uint64_t gap = 0;

	if (len == XCHUNK) {	/* a constant trip count: straight-line vector code */
		for (int k = 0; k < XCHUNK; k++)
			gap |= x[k] ^ (x[0] + (uint64_t)k * size);
	} else {
		for (int k = 0; k < len; k++)
			gap |= x[k] ^ (x[0] + (uint64_t)k * size);
	}
	return !gap;
}

/* lowest, highest and or-ed address of the len addresses at x */
static inline void chunk_bounds(const uint64_t *restrict x, int len, uint64_t *lo, uint64_t *hi,
				uint64_t *orr)
{
	uint64_t l = ~0ull, h = 0, o = 0;

	for (int k = 0; k < len; k++) {
		l = x[k] < l ? x[k] : l;
		h = x[k] > h ? x[k] : h;
		o |= x[k];
	}
	*lo = l, *hi = h, *orr = o;
}

/* complete the chunks before lane k1 of a dense result (all consecutive, first translated) */
static void undense(uint64_t *restrict xa, int k1, uint64_t size)
{
	for (int k0 = 0; k0 < k1; k0 += XCHUNK)
		for (int k = k0 + 1; k < k0 + XCHUNK; k++)
			xa[k] = xa[k0] + (uint64_t)(k - k0) * size;
}

/* every lane of the block active: xa[k] is lane k's */
static inline __attribute__((always_inline)) int xlate_all(struct jctx *c, int space,
							   uint64_t align, uint64_t size, int acc)
{
	uint64_t *restrict xa = c->xa;
	const uint64_t xb = (uint64_t)(uintptr_t)c->xb;
	const int n = c->nt;
	int dense = 1;

	for (int k0 = 0; k0 < n; k0 += XCHUNK) {
		const int len = n - k0 < XCHUNK ? n - k0 : XCHUNK;
		uint64_t *restrict x = xa + k0;
		uint64_t lo, hi, orr, d = 0;
		int per_lane = 0, ok;
		const int run = chunk_run(x, len, size);
		if (run)
			lo = x[0], hi = x[0] + (uint64_t)(len - 1) * size, orr = x[0] | size;
		else
			chunk_bounds(x, len, &lo, &hi, &orr);
		ok = chunk_delta(c, space, lo, hi, orr, align, size, acc, &d, &per_lane);
		d -= xb;
		if (dense && ok && run && !per_lane) {
			x[0] += d;
			continue;
		}
		if (dense)
			undense(xa, k0, size);
		dense = 0;
		if (!ok) {
			if (c->rt->xlate_each(c, 0, k0, k0 + len, space, align, size, acc) < 0)
				return -1;
		} else if (per_lane) {
			for (int k = 0; k < len; k++)
				x[k] += d + (uint64_t)(k0 + k) * c->lo_stride;
		} else {
			for (int k = 0; k < len; k++)
				x[k] += d;
		}
	}
	return dense;
}

/* xlate_all for global memory (the common case, where the chunk checks are short): in
   each kernel, where the compiler specializes it for the kernel's accesses (the other
   spaces' and partial blocks' are the runtime's: xlate_rt.h) */
static int xlate_global(struct jctx *c, uint64_t align, uint64_t size, int acc)
{
	return xlate_all(c, SP_GLOBAL, align, size, acc);
}

static inline int xlate(struct jctx *c, int full, int na, int space, uint64_t align,
			uint64_t size, int acc)
{
	if (full && space == SP_GLOBAL)
		return xlate_global(c, align, size, acc);
	if (full)
		return c->rt->xlate_any(c, space, align, size, acc);
	return c->rt->xlate_listed(c, c->act, na, space, align, size, acc);
}
