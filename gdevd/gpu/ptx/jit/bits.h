/* bits.h - bit and clock helpers of the translated instructions (jit/intops.py). */
#ifndef GDEV_JIT_BITS_H
#define GDEV_JIT_BITS_H

#include <stdint.h>
#include <time.h>

/* %clock64 / %globaltimer: CLOCK_MONOTONIC in ns, the interpreter's time.monotonic_ns() */
static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint32_t brev32(uint32_t v)
{
	v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
	v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
	v = ((v >> 4) & 0x0F0F0F0Fu) | ((v & 0x0F0F0F0Fu) << 4);
	return __builtin_bswap32(v);
}

static inline uint64_t brev64(uint64_t v)
{
	return ((uint64_t)brev32((uint32_t)v) << 32) | brev32((uint32_t)(v >> 32));
}

/* prmt's special modes (PTX ISA's table; ops_bits.py): result byte k of the 8 bytes b:a is
   byte sel(s, k) for s = c & 3; mode 0 f4e, 1 b4e, 2 rc8, 3 ecl, 4 ecr, 5 rc16 */
static inline uint32_t prmt_mode(uint32_t a, uint32_t b, uint32_t c, int mode)
{
	const uint64_t src = (uint64_t)a | ((uint64_t)b << 32);
	const int s = (int)(c & 3);
	uint32_t out = 0;

	for (int k = 0; k < 4; k++) {
		int sel;
		switch (mode) {
		case 0: sel = (s + k) & 7; break;
		case 1: sel = (s - k) & 7; break;
		case 2: sel = s; break;
		case 3: sel = s > k ? s : k; break;
		case 4: sel = s < k ? s : k; break;
		default: sel = (s & 1) * 2 + (k & 1); break;
		}
		out |= (uint32_t)((src >> (sel * 8)) & 0xFF) << (8 * k);
	}
	return out;
}

#endif
