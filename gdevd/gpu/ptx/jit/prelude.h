/*
 * prelude.h - the run-time support every compiled kernel includes.
 *
 * A compiled kernel runs the blocks [block, block_end) of a launch one after another, the
 * threads of a block as lanes: each register is an array over the block's lanes, each
 * instruction a loop over the active lanes.  All execution state lives in struct jctx and
 * the buffers it points to (program counters, registers, shared/local/param memory), which
 * the Python side owns, so a run can stop after any basic block and resume exactly.
 *
 * Memory accesses (the TLB in front of the page table, faults, xlate) are in xlate.h.  The
 * scheduler and xlate.h's out-of-line part are compiled once into the runtime object
 * (scheduler.h, xlate_rt.h, runtime.py) and called through c->rt.
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
	/* the device runtime's call `name` for lanes[0..n) (arguments' .param offset and size
	   pairs, the return variable's or -1 and 0); nonzero: a fault */
	int32_t (*host_devrt)(void *arg, const char *name, const int32_t *lanes, int32_t n,
			      const int64_t *args, int32_t nargs, int64_t ret, int64_t size);
	void *host_arg;
	const struct jrt *rt;	/* the scheduler (scheduler.h, in the runtime object) */
};

/* The runtime's entry points: the scheduler and the out-of-line memory translation,
   compiled once into the runtime object (scheduler.h, xlate_rt.h, runtime.py), not in
   every kernel's translation unit */
struct jrt {
	void (*block_init)(struct jctx *c);	/* a block starts */
	int32_t (*pick)(struct jctx *c, const uint8_t *coll);	/* the PC to run; -1: done */
	void (*live_lanes)(struct jctx *c);	/* act = the live lanes of a uniform block */
	void (*run_slots)(int (*body)(struct jctx *), struct jctx **cs, int n, int64_t budget);
	uint8_t *(*g_slow)(struct jctx *c, uint64_t va, int acc);	/* a TLB miss */
	int (*xlate_each)(struct jctx *c, const int32_t *lanes, int k0, int k1, int space,
			  uint64_t align, uint64_t size, int acc);
	int (*xlate_any)(struct jctx *c, int space, uint64_t align, uint64_t size, int acc);
	int (*xlate_listed)(struct jctx *c, const int32_t *lanes, int cnt, int space,
			    uint64_t align, uint64_t size, int acc);
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


