/*
 * half.h - f16 rounding for the translated instructions (jit/halfops.py, arith.py's cvt).
 *
 * rnd_f16 mirrors ops_float.round_to for float16: round to nearest, then one step towards
 * the directed mode's side if that overshot (np.nextafter on the f16 bits).
 */
#ifndef GDEV_JIT_HALF_H
#define GDEV_JIT_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* the f16 next to h (bits) towards dir (-1 down, +1 up) */
static inline uint16_t f16_step(uint16_t h, int dir)
{
	int neg = h >> 15;

	if ((h & 0x7FFF) == 0)
		return dir > 0 ? 0x0001 : 0x8001;
	return (dir > 0) != neg ? h + 1 : h - 1;
}

static inline float rnd_f16(double x, int mode)
{
	_Float16 f = (_Float16)x;
	double back = (double)f;
	uint16_t h;
	int dir = 0;

	if (isnan(x))
		return (float)f;
	if (mode == 1 && fabs(back) > fabs(x))
		dir = back > 0 ? -1 : 1;
	else if (mode == 2 && back > x)
		dir = -1;
	else if (mode == 3 && back < x)
		dir = 1;
	if (!dir)
		return (float)f;
	memcpy(&h, &f, 2);
	h = f16_step(h, dir);
	memcpy(&f, &h, 2);
	return (float)f;
}

/* bf16 (ptx/bf16.py): bits to float, and a double rounded once to bf16 bits: to f32
 * rounding to odd, then to nearest even on the top half; NaN -> 0x7FFF; relu: < 0 -> +0 */
static inline float bf2f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t f2bf(double x, int relu)
{
	float f = (float)x;
	double back = (double)f;
	uint32_t u;

	if (isnan(x))
		return 0x7FFF;
	if (relu && x < 0)
		return 0;
	memcpy(&u, &f, 4);
	if (back != x) {
		if (isinf(f))
			u = (u & 0x80000000u) | 0x7F7FFFFFu;
		else if (fabs(back) > fabs(x))
			u -= 1;
		u |= 1;
	}
	return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* an f32 rounded toward zero to bf16 bits (cvt.rz): its top half; NaN and relu as f2bf */
static inline uint16_t f2bf_rz(float f, int relu)
{
	uint32_t u;

	if (isnan(f))
		return 0x7FFF;
	if (relu && f < 0)
		return 0;
	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

#endif
