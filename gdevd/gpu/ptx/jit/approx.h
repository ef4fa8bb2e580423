/*
 * approx.h - the .approx functions, operation for operation as gdevd/gpu/ptx/approx.py.
 *
 * Invariant: every function here performs exactly the IEEE operations of its numpy twin, in
 * the same order (the translator compiles with -ffp-contract=off, so no multiply-add is
 * fused), so both engines return the same bits.  See approx.py for the precision model.
 */
#ifndef GDEV_JIT_APPROX_H
#define GDEV_JIT_APPROX_H

#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const double AX_LN2 = 0.6931471805599453, AX_LOG2E = 1.4426950408889634;
static const double AX_TWO_PI = 6.283185307179586, AX_SQRT_HALF = 0.7071067811865476;

static inline double ax_horner(const double *c, int n, double x)
{
	double r = c[n - 1];

	for (int k = n - 2; k >= 0; k--)
		r = r * x + c[k];
	return r;
}

static inline double ax_quantize(double x, int bits)
{
	uint64_t u, s = 53 - bits, half = (1ull << (52 - bits)) - 1;

	if (!isfinite(x))
		return x;
	memcpy(&u, &x, 8);
	u = ((u + half + ((u >> s) & 1)) >> s) << s;
	memcpy(&x, &u, 8);
	return x;
}

static const double AX_EXP_C[13] = {
	1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
	1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600 };

static inline double ax_exp2_core(double x)
{
	double n = rint(x);
	double y = (x - n) * AX_LN2;

	if (n > 1100) n = 1100;
	if (n < -1100) n = -1100;
	return ldexp(ax_horner(AX_EXP_C, 13, y), (int)n);
}

static inline float ax_ex2(float xf)
{
	double x = xf;

	if (isnan(x))
		return xf;
	x = x < -200.0 ? -200.0 : x > 200.0 ? 200.0 : x;
	return (float)ax_quantize(ax_exp2_core(x), 23);
}

static inline float ax_lg2(float xf)
{
	static const double c[11] = { 1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11,
				      1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21 };
	double x = xf, m, s;
	int e;

	if (!(isfinite(x) && x > 0))
		return x == 0 ? -INFINITY : x > 0 ? xf : NAN;
	m = frexp(x, &e);
	if (m < AX_SQRT_HALF) {
		m = m * 2.0;
		e -= 1;
	}
	s = (m - 1.0) / (m + 1.0);
	return (float)ax_quantize(e + (2.0 * s * ax_horner(c, 11, s * s)) * AX_LOG2E, 23);
}

static inline float ax_sincos(float xf, int shift)
{
	static const double sc[8] = { 1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880,
				      -1.0 / 39916800, 1.0 / 6227020800.0,
				      -1.0 / 1307674368000.0 };
	static const double cc[9] = { 1.0, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320,
				      -1.0 / 3628800, 1.0 / 479001600, -1.0 / 87178291200.0,
				      1.0 / 20922789888000.0 };
	const double inv2pi = (double)(float)(1.0 / AX_TWO_PI);
	double x = xf, t, u, q, a, a2, s, c, r;
	int k;

	if (!isfinite(x))
		return NAN;
	t = (double)(float)(x * inv2pi);
	u = t - rint(t);
	q = rint(4.0 * u);
	a = (u - 0.25 * q) * AX_TWO_PI;
	a2 = a * a;
	s = a * ax_horner(sc, 8, a2);
	c = ax_horner(cc, 9, a2);
	k = ((int)q + shift) & 3;
	r = k == 0 ? s : k == 1 ? c : k == 2 ? -s : -c;
	return (float)ax_quantize(r, 22);
}

static inline float ax_sin(float x) { return ax_sincos(x, 0); }
static inline float ax_cos(float x) { return ax_sincos(x, 1); }

static inline float ax_tanh(float xf)
{
	double x = xf, ax, e, r;

	if (isnan(x))
		return xf;
	ax = fabs(x);
	ax = ax < 20.0 ? ax : 20.0;
	if (ax < 0x1p-10) {
		r = ax - ax * ax * ax / 3.0;
	} else {
		e = ax_exp2_core(-2.0 * ax * AX_LOG2E);
		r = (1.0 - e) / (1.0 + e);
	}
	return (float)copysign(ax_quantize(r, 11), x);
}

static inline float ax_rcp(float x)
{
	return (float)ax_quantize(1.0 / (double)x, 23);
}

static inline float ax_sqrt(float x)
{
	return (float)ax_quantize(sqrt((double)x), 23);
}

static inline float ax_rsqrtf(float x)
{
	return (float)ax_quantize(1.0 / sqrt((double)x), 23);
}

static inline double ax_rsqrt(double x)
{
	return ax_quantize(1.0 / sqrt(x), 23);
}

static inline float ax_div_approx(float a, float b)
{
	float r = ax_rcp(b);

	if (fabsf(r) < 0x1p-126f)
		r = copysignf(0.0f, r);
	return a * r;
}

static inline float ax_div_full(float a, float b)
{
	return (float)ax_quantize((double)a / (double)b, 23);
}

static inline double ax_rcp_f64(double x)
{
	uint64_t u;
	double r;

	memcpy(&u, &x, 8);
	u &= 0xFFFFFFFF00000000ull;
	memcpy(&x, &u, 8);
	if (fabs(x) < 0x1p-1022)
		x = copysign(0.0, x);
	r = ax_quantize(1.0 / x, 21);
	return fabs(r) < 0x1p-1022 ? copysign(0.0, r) : r;
}

/*
 * fma.f64, rounded once.  A NaN result is recomputed as a * b + c so that its bits are the
 * interpreter's (numpy's); directed modes switch the rounding mode around one fma, the
 * volatile accesses keeping the compiler from moving the operation out of that window.
 */
/* the host rounding mode of a PTX one (ROUND in arith.py: rn, rz, rm, rp) */
static const int FE_OF_MODE[4] = { FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD };

static inline double fma_rn(double a, double b, double c)
{
	double r = fma(a, b, c);

	return isnan(r) ? a * b + c : r;
}

static inline double fma_dir(double a, double b, double c, int mode)
{
	volatile double va = a, vb = b, vc = c, vr;

	fesetround(FE_OF_MODE[mode & 3]);
	vr = fma(va, vb, vc);
	fesetround(FE_TONEAREST);
	return isnan(vr) ? a * b + c : vr;
}

/*
 * f64 add/mul/div/sqrt, f32 fma (add as fma(a, 1, b)) and integer conversions in a
 * directed mode, rounded once by the hardware in that mode (the interpreter's directed.py
 * and ops_float.fma_f32 compute the same exactly).
 */
enum { DIR_ADD, DIR_MUL, DIR_DIV, DIR_SQRT };

static inline double dir_f64(int op, double a, double b, int mode)
{
	volatile double va = a, vb = b, vr;

	fesetround(FE_OF_MODE[mode & 3]);
	switch (op) {
	case DIR_ADD: vr = va + vb; break;
	case DIR_MUL: vr = va * vb; break;
	case DIR_DIV: vr = va / vb; break;
	default: vr = sqrt(va); break;
	}
	fesetround(FE_TONEAREST);
	return vr;
}

static inline float dir_f32_fma(float a, float b, float c, int mode)
{
	volatile float va = a, vb = b, vc = c, vr;

	fesetround(FE_OF_MODE[mode & 3]);
	vr = fmaf(va, vb, vc);
	fesetround(FE_TONEAREST);
	return vr;
}

#define DIR_I2F(name, FT, IT) \
	static inline FT name(IT x, int mode) \
	{ \
		volatile IT vx = x; \
		volatile FT vr; \
		fesetround(FE_OF_MODE[mode & 3]); \
		vr = (FT)vx; \
		fesetround(FE_TONEAREST); \
		return vr; \
	}
DIR_I2F(dir_s64_f64, double, int64_t)
DIR_I2F(dir_u64_f64, double, uint64_t)
DIR_I2F(dir_s64_f32, float, int64_t)
DIR_I2F(dir_u64_f32, float, uint64_t)
DIR_I2F(dir_u32_f32, float, uint32_t)
DIR_I2F(dir_s32_f32, float, int32_t)

#endif
