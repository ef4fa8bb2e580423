/*
 * scheduler.h - the scheduler of compiled kernels: block start, min-PC scheduling and the
 * slots of one engine thread.  Compiled once per cache and salt into the runtime object
 * (runtime.py), not in every kernel: kernels call it through c->rt (struct jrt, prelude.h).
 */
#include "prelude.h"

/* block start: fresh program counters and per-block memory (the kernel zeroes the
   registers a lane may read before writing) */
static void block_init(struct jctx *c)
{
	uint64_t b = c->block;

	memset(c->cc, 0, (uint64_t)c->nt);
	if (c->pcw)	/* else it holds the zeros it was cleared to (lanes of a uniform block
			   move together in upc, and a block whose lanes all exit at once ends) */
		memset(c->pc, 0, sizeof(int32_t) * (uint64_t)c->nt);
	c->pcw = 0;
	if (c->shared_size) memset(c->shared, 0, c->shared_size);
	if (c->local_size) memset(c->local, 0, c->lo_stride * (uint64_t)c->nt);
	if (c->pv_stride) memset(c->pvars, 0, c->pv_stride * (uint64_t)c->nt);
	c->ctaid[0] = b % c->nctaid[0];
	c->ctaid[1] = (b / c->nctaid[0]) % c->nctaid[1];
	c->ctaid[2] = b / ((uint64_t)c->nctaid[0] * c->nctaid[1]);
	c->upc = 0;
	c->deferred = 0;
	c->nlive = c->nt;
	c->act_ok = 0;
	c->started = 1;
}

/* the lowest of n program counters (a loop the C compiler vectorizes) */
static __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic"))) int32_t
min_pc(const int32_t *restrict pcs, int n)
{
	int32_t m = PC_EXIT;

	for (int i = 0; i < n; i++)
		m = pcs[i] < m ? pcs[i] : m;
	return m;
}

/* the lanes whose program counter is m, in increasing order, into act; their count */
static int lanes_at(const int32_t *restrict pcs, int n, int32_t m, int32_t *restrict act)
{
	int k = 0, i = 0;
#ifdef __AVX512F__
	const __m512i want = _mm512_set1_epi32(m), step = _mm512_set1_epi32(16);
	__m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	for (; i + 16 <= n; i += 16) {
		__mmask16 hit = _mm512_cmpeq_epi32_mask(_mm512_loadu_si512(pcs + i), want);
		_mm512_mask_compressstoreu_epi32(act + k, hit, idx);
		k += __builtin_popcount(hit);
		idx = _mm512_add_epi32(idx, step);
	}
#endif
	for (; i < n; i++)
		if (pcs[i] == m)
			act[k++] = i;
	return k;
}

/* the lanes at m whose warp's live lanes are all there, into act; their count (a block
   with a warp-collective instruction runs for whole warps: a shfl.sync names its warp mates
   in its member mask, and a GPU waits for them to arrive) */
static int whole_warps_at(struct jctx *c, int32_t m)
{
	const int32_t *pcs = c->pc;
	const int n = c->nt;
	int k = 0;

	for (int w = 0; w < n; w += 32) {
		const int end = w + 32 < n ? w + 32 : n;
		int whole = 1;
		for (int i = w; i < end; i++)
			whole &= pcs[i] == m || pcs[i] >= PC_EXIT;
		for (int i = w; i < end && whole; i++)
			if (pcs[i] == m)
				c->act[k++] = i;
	}
	return k;
}

/* the lanes at m that may run now, into act (see whole_warps_at); their count */
static int may_run_at(struct jctx *c, const uint8_t *coll, int32_t m)
{
	return coll[m] ? whole_warps_at(c, m) : lanes_at(c->pc, c->nt, m, c->act);
}

/* The fairness step (executor.py's _ahead): the lanes at the highest PC that may run now,
   into act; that PC, or -1 if none may.  A warp collective passed over for its missing warp
   mates has waited the FAIRNESS_PERIOD picks since the last step; once it has waited
   DEFER_MAX, its lanes run (the mates may be outside its member mask, spinning on what
   the collective's lanes do next). */
static int32_t ahead(struct jctx *c, const uint8_t *coll)
{
	const int32_t *pcs = c->pc;
	const int n = c->nt;
	int32_t bound = WAIT;

	for (;;) {
		int32_t m = -1;
		int k;
		for (int i = 0; i < n; i++)
			m = pcs[i] < bound && pcs[i] > m ? pcs[i] : m;
		if (m < 0)
			return -1;
		k = may_run_at(c, coll, m);
		if (!k && coll[m] && (c->deferred += FAIRNESS_PERIOD) >= DEFER_MAX) {
			c->deferred = 0;
			k = lanes_at(pcs, n, m, c->act);
		}
		if (k) {
			c->nact = k;
			return m;
		}
		bound = m;
	}
}

/* The lanes to run when m is the lowest PC, into act; their PC.  At a warp-collective
   block whose warps are not whole, the lowest PC from m up that may run (executor.py's
   _runnable): the warp mates elsewhere run until they arrive.  If none may (a partial
   member mask, a mate that never comes) or the collective has waited DEFER_MAX picks,
   every lane at m runs, and a source lane that is not there reads 0 (ops_warp.py). */
static int32_t runnable(struct jctx *c, const uint8_t *coll, int32_t m)
{
	const int32_t *pcs = c->pc;
	const int n = c->nt;
	int k = lanes_at(pcs, n, m, c->act);

	if (coll[m] && k != c->nlive && c->deferred < DEFER_MAX) {
		for (int32_t lo = m; lo < WAIT;) {
			int32_t nx = WAIT;
			const int ok = may_run_at(c, coll, lo);
			if (ok) {
				c->nact = ok;
				c->deferred++;
				return lo;
			}
			for (int i = 0; i < n; i++)
				nx = pcs[i] > lo && pcs[i] < nx ? pcs[i] : nx;
			lo = nx;
		}
		k = lanes_at(pcs, n, m, c->act);
	}
	if (coll[m])	/* the collective runs for every lane there */
		c->deferred = 0;
	c->nact = k;
	return m;
}

/* min-PC scheduling as the interpreter does it (see executor.py); -1 when the block ended */
static int32_t pick(struct jctx *c, const uint8_t *coll)
{
	int32_t *pcs = c->pc, m = min_pc(c->pc, c->nt), n = c->nt, k;

	if (m >= PC_EXIT)
		return -1;
	if (m >= WAIT) {
		for (int i = 0; i < n; i++)
			if (pcs[i] < PC_EXIT)
				pcs[i] -= WAIT;
		m -= WAIT;
	}
	if (++c->divsteps % FAIRNESS_PERIOD == 0) {
		int32_t hi = ahead(c, coll);
		if (hi >= 0) {
			if (c->nact == c->nlive) {
				c->upc = hi;
				c->act_ok = 1;
			}
			return hi;
		}
	}
	m = runnable(c, coll, m);
	k = c->nact;
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

/*
 * Run the slots cs[0..n) of one engine thread, interleaved block by block: each runs until
 * it has spent `budget` steps (after a basic block), finished its blocks or faulted, as if
 * it ran alone, so what a slice does does not depend on how slots are shared among
 * threads.  Interleaving keeps the blocks in flight consecutive, which is what neighbours
 * spinning on each other's flags need, and the memory a thread touches close together
 * (slot s runs blocks s, s + R, ...: run alone, each slot would sweep the whole grid).
 * A slot with a quantum (a cooperative launch's block: coop.py) gets its budget in turns
 * of that many steps, so that a block spinning at a grid barrier yields to the others;
 * the kernels' run loops are the same for every launch.
 */
/* a cooperative slot's turn ended with budget in reserve: its next turn, after the others */
static void next_turn(struct jctx *c)
{
	const int64_t give = c->quantum < c->reserve ? c->quantum : c->reserve;

	c->reserve -= give;
	c->left += give;	/* (a turn may overrun `left` by the rest of a basic block) */
	c->status = 2;
}

static void run_slots(int (*body)(struct jctx *), struct jctx **cs, int n, int64_t budget)
{
	int live = n;

	for (int t = 0; t < TLB_SIZE; t++)	/* mappings may have changed since the last run */
		cs[0]->tlb_own.tag[t] = ~0ull;
	for (int k = 0; k < n; k++) {	/* one TLB per thread: its slots share pages */
		const int64_t q = cs[k]->quantum;
		cs[k]->left = q && q < budget ? q : budget;
		cs[k]->reserve = budget - cs[k]->left;
		cs[k]->status = 2;
		cs[k]->tlb = &cs[0]->tlb_own;
	}
	pthread_rwlock_rdlock(&cs[0]->mmu->lock);	/* every slot of a launch has one mmu */
	while (live)
		for (int k = 0; k < n; k++) {
			if (cs[k]->status != 2)
				continue;
			cs[k]->status = body(cs[k]);
			if (cs[k]->status == 0 && cs[k]->reserve > 0)
				next_turn(cs[k]);
			live -= cs[k]->status != 2;
		}
	pthread_rwlock_unlock(&cs[0]->mmu->lock);
}

#include "xlate_rt.h"
#include "team.h"

static const struct jrt gdev_jit_rt = {
	block_init, pick, live_lanes, run_slots, g_slow, xlate_each, xlate_any, xlate_listed
};

/* the table kernels call through (runtime.py stores its address in every jctx) */
const void *gdev_jit_runtime(void)
{
	return &gdev_jit_rt;
}
