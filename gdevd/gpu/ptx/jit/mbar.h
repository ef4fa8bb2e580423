/*
 * mbar.h - mbarrier objects of compiled kernels, the C twin of ops_mbarrier.step (the
 * layout and the rules of a phase are in that module's docstring).  A slot runs one block
 * at a time and its lanes one after another, so the object needs no atomics.
 * Included by prelude.h after xlate.h.
 */

enum { MB_ARRIVE = 1, MB_DROP = 2, MB_EXPECT_TX = 4, MB_COMPLETE_TX = 8 };
#define MB_PEND 0xFFFFFull
#define MB_TXMASK ((1ull << 21) - 1)
#define MB_PHASE (1ull << 63)

/* the mbarrier at va (a shared offset, or a generic address when generic), or NULL with
   the interpreter's fault recorded: outside the shared window, misaligned, out of bounds */
static inline uint64_t *mbar_ptr(struct jctx *c, uint64_t va, int generic)
{
	if (generic) {
		if ((va >> 48) != 1)
			return (uint64_t *)fault(c, va, F_OOB_SHARED);
		va -= 1ull << 48;
	}
	return (uint64_t *)sptr(c, va, 8, 8);
}

/* one thread's operation (MB_* bits) on *p; returns its state token */
static inline uint64_t mbar_step(uint64_t *p, int kind, uint64_t count, uint64_t tx)
{
	uint64_t s = *p, pend = s & MB_PEND, exp = (s >> 20) & MB_PEND;
	uint64_t txc = (s >> 40) & MB_TXMASK, ph = s & MB_PHASE, tok;

	if (kind & MB_EXPECT_TX)
		txc = (txc + tx) & MB_TXMASK;
	if (kind & MB_COMPLETE_TX)
		txc = (txc - tx) & MB_TXMASK;
	if (kind & MB_DROP)
		exp = (exp - count) & MB_PEND;
	if (kind & (MB_ARRIVE | MB_DROP))
		pend = pend > count ? pend - count : 0;
	tok = ph | pend;
	if (!pend && !txc && (kind & (MB_ARRIVE | MB_DROP | MB_COMPLETE_TX))) {
		ph ^= MB_PHASE;
		pend = exp;
	}
	*p = ph | txc << 40 | exp << 20 | pend;
	return tok;
}
