/*
 * prelude.h - the run-time support every compiled kernel includes.
 *
 * A compiled kernel runs the blocks [block, block_end) of a launch one after another, the
 * threads of a block as lanes: each register is an array over the block's lanes, each
 * instruction a loop over the active lanes.  All execution state lives in struct jctx and
 * the buffers it points to (program counters, registers, shared/local/param memory), which
 * the Python side owns, so a run can stop after any basic block and resume exactly.
 *
 * Memory accesses (the TLB in front of the page table, faults, xlate) are in xlate.h.
 */
#include <math.h>
#include <stdint.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <string.h>

#include "mmu_internal.h"
#include "heap.h"
#include "approx.h"
#include "bits.h"
#include "half.h"

/* One access of 8 or 16 bytes at any alignment (volatile: never split nor merged): a
 * vector that other engine threads may be reading or writing moves whole (memops.py). */
typedef uint64_t gdev_u64u __attribute__((aligned(1)));
typedef uint8_t gdev_v16 __attribute__((vector_size(16), aligned(1)));

#define PC_EXIT (1 << 30)
#define WAIT (1 << 29)
#define TLB_SIZE 1024
/* up to TLB_SIZE consecutive pages never share a slot, and arrays a multiple of TLB_SIZE
   pages (4 MiB) apart are shifted by a multiple of 157 slots, so the rows of a few such
   arrays do not evict each other (with an xor of the high bits, the rows of three arrays
   4 MiB apart shared 16 slots: MADD missed the TLB on every access) */
#define TLB_SLOT(page) ((unsigned)((page) + ((page) >> 10) * 157u + ((page) >> 20) * 59u) & \
			(TLB_SIZE - 1))
#define FAIRNESS_PERIOD 64
#define DEFER_MAX 4096	/* picks a warp collective waits for its warp mates (runnable) */

enum { F_UNMAPPED = 1, F_MISALIGNED, F_PROTECTION, F_OOB_SHARED, F_OOB_LOCAL, F_OOB_PARAM,
       F_PARAM_RO, F_TRAP, F_TEX, F_ASSERT, F_TEXKIND, F_HEAP, F_SURF, F_SURFKIND,
       F_SURFOUT, F_HOST };

/* a direct-mapped software TLB in front of the page table (xlate.h) */
struct jtlb {
	uint64_t tag[TLB_SIZE];
	uint8_t *base[TLB_SIZE];
	uint8_t acc[TLB_SIZE];
};

struct jctx {
	struct gdev_mmu *mmu;
	uint8_t *params, *shared, *local, *pvars, *regs, *cc;
	uint64_t *xa;	/* per lane: a memory access's address, then its host pointer - xb */
	uint8_t *xb;	/* any fixed host address (the shared buffer): xa's origin */
	int32_t *pc, *act, *tid_x, *tid_y, *tid_z, *iota;	/* iota[i] = i */
	uint64_t param_size, shared_size, local_size, lo_stride, pv_stride, reg_stride;
	uint64_t data_base, block, block_end, block_step, instructions, thread_instructions, fault_va;
	int64_t left;	/* steps left of this slice's budget */
	uint32_t ntid[3], nctaid[3], ctaid[3];
	int32_t nt, upc, nlive, nact, act_ok, started, fault_line, fault_kind;
	int32_t status;	/* of the last run: 0 budget spent, 1 blocks done, -1 fault */
	int32_t pcw;	/* the block wrote pc[] (it diverged or lanes exited): clear it at the next */
	uint32_t divsteps, dyn_shared;
	uint64_t grid_ws;	/* a cooperative launch's grid workspace (%envreg1/2), else 0 */
	int64_t quantum;	/* cooperative: the steps of a turn (run_slots; 0: no turns) */
	int64_t reserve;	/* the slice's steps not yet handed to `left` (run_slots) */
	struct jtlb *tlb;	/* the TLB this slot uses: its engine thread's (run_slots) */
	struct jtlb tlb_own;
	const void *tex;	/* the launch's texture objects (struct jtex, tex.h) */
	uint64_t ntex;
	struct gdev_heap *heap;	/* the context's device heap (heap.h), NULL without one */
	uint32_t deferred;	/* picks the lowest PC's warp collective has waited (runnable) */
	/* a call into the host (hostcall.py): device printf of lanes[0..n) (the .param
	   variables' offsets: format, arguments, return value or -1); nonzero: a fault */
	int32_t (*host_printf)(void *arg, const int32_t *lanes, int32_t n, int64_t fmt,
			       int64_t buf, int64_t ret);
	void *host_arg;
};

#define U2F(x) __extension__({ uint32_t u_ = (x); float f_; memcpy(&f_, &u_, 4); f_; })
#define F2U(x) __extension__({ float f_ = (x); uint32_t u_; memcpy(&u_, &f_, 4); u_; })
#define U2D(x) __extension__({ uint64_t u_ = (x); double f_; memcpy(&f_, &u_, 8); f_; })
#define D2U(x) __extension__({ double f_ = (x); uint64_t u_; memcpy(&u_, &f_, 8); u_; })
/* f16 values: computed on as float, rounded once (to nearest) from the double value */
#define H2F(x) __extension__({ uint16_t h_ = (x); _Float16 f_; memcpy(&f_, &h_, 2); (float)f_; })
#define F2H(x) __extension__({ _Float16 f_ = (_Float16)(double)(x); uint16_t h_; \
	memcpy(&h_, &f_, 2); h_; })

#include "xlate.h"
#include "tex.h"
#include "texmip.h"
#include "surf.h"
#include "mbar.h"

/* what a faulting lane of a load checked in its loop reads instead (lanes.py) */
static uint8_t jit_pad[64] __attribute__((unused));

static inline float ftzf(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
/* .sat: [+0, 1]; NaN and -0.0 give +0.0 */
static inline float satf(float x) { return isnan(x) || x <= 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline double satd(double x) { return isnan(x) || x <= 0.0 ? 0.0 : x > 1.0 ? 1.0 : x; }

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

