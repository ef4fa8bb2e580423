/*
 * xlate_rt.h - the out-of-line part of xlate.h, compiled once into the runtime object
 * (runtime.py) with the scheduler: the TLB's miss path, lane-by-lane translation, and the
 * translation of accesses to the other spaces than global and of partial blocks.  Kernels
 * reach them through c->rt (xlate.h's gptr, xlate_all and xlate); the global accesses of
 * whole blocks, the hot path, stay in each kernel, specialized by its compiler.
 */

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
	c->tlb->tag[slot] = page;
	c->tlb->acc[slot] = pte & PTE_ACC;
	c->tlb->base[slot] = c->mmu->ap[(pte >> PTE_AP_SHIFT) & PTE_AP_MASK].base + (pte & ~PAGE_MASK);
	return c->tlb->base[slot] + (va & PAGE_MASK);
}

/* lanes k0..k1-1 one by one (listed in lanes, or all if NULL), in lane order */
static int xlate_each(struct jctx *c, const int32_t *lanes, int k0, int k1, int space,
		      uint64_t align, uint64_t size, int acc)
{
	const uint64_t xb = (uint64_t)(uintptr_t)c->xb;

	for (int k = k0; k < k1; k++) {
		const int i = lanes ? lanes[k] : k;
		uint8_t *p = ptr_of(c, space, c->xa[i], align, size, acc, i);
		if (!p)
			return -1;
		c->xa[i] = (uint64_t)(uintptr_t)p - xb;
	}
	return 0;
}

/* the active lanes listed in lanes[0..cnt) (never dense) */
static int xlate_listed(struct jctx *c, const int32_t *restrict lanes, int cnt, int space,
			uint64_t align, uint64_t size, int acc)
{
	uint64_t *restrict xa = c->xa;
	const uint64_t xb = (uint64_t)(uintptr_t)c->xb;

	for (int k0 = 0; k0 < cnt; k0 += XCHUNK) {
		const int k1 = k0 + XCHUNK < cnt ? k0 + XCHUNK : cnt;
		uint64_t lo = ~0ull, hi = 0, orr = 0, d = 0;
		int per_lane = 0;
		for (int k = k0; k < k1; k++) {
			uint64_t v = xa[lanes[k]];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
			orr |= v;
		}
		if (!chunk_delta(c, space, lo, hi, orr, align, size, acc, &d, &per_lane)) {
			if (xlate_each(c, lanes, k0, k1, space, align, size, acc) < 0)
				return -1;
			continue;
		}
		d -= xb;
		for (int k = k0; k < k1; k++)
			xa[lanes[k]] += d + (per_lane ? (uint64_t)lanes[k] * c->lo_stride : 0);
	}
	return 0;
}

static int xlate_any(struct jctx *c, int space, uint64_t align, uint64_t size, int acc)
{
	return xlate_all(c, space, align, size, acc);
}

