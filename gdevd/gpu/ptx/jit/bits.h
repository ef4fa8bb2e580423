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

#endif
