/*
 * tex.h - texture fetches of compiled kernels: the interpreter's texsample.py in C, bit for
 * bit (the same float32 operations in the same order; the 9-bit linear weights rounded half
 * to even as numpy rounds).  Included by prelude.h after xlate.h.
 *
 * The launch hands the kernel a snapshot of its context's texture table (struct jtex, built
 * by launch.py when the launch is prepared); a handle not in it faults with F_TEX.  Texels
 * are read through gptr(), so texels over unmapped memory fault like a global load.
 */

struct jtex {
	uint64_t handle, addr, width, height, pitch;
	uint32_t pitch2d, kind, esize, channels;	/* kind: 0 uint, 1 int, 2 float, 3 half */
	uint32_t normalized, read_norm, linear, floats;
	uint32_t modes[3];	/* 0 wrap, 1 clamp, 2 mirror, 3 border */
	float norm;
	float border[4];
};

#define TEX_LIMIT 1099511627776.0	/* 2^40: coordinates beyond it stay far outside */

static const struct jtex *tex_find(struct jctx *c, uint64_t h)
{
	const struct jtex *t = (const struct jtex *)c->tex;

	for (uint64_t k = 0; k < c->ntex; k++)
		if (t[k].handle == h)
			return &t[k];
	return 0;
}

static inline int64_t tex_floor(double x)
{
	if (isnan(x))
		return 0;
	x = x > TEX_LIMIT ? TEX_LIMIT : x < -TEX_LIMIT ? -TEX_LIMIT : x;
	return (int64_t)floor(x);
}

/* numpy's float -> int64 cast on x86: out of range and NaN give INT64_MIN */
static inline int64_t tex_f2i(float x)
{
	return isnan(x) || x >= 9.2233720368547758e18f || x < -9.2233720368547758e18f ?
		INT64_MIN : (int64_t)x;
}

/* the texel index of i along dimension dim, or -1 (border) */
static inline int64_t tex_addr(const struct jtex *t, int64_t i, int dim)
{
	int64_t n = (int64_t)(dim ? t->height : t->width);
	uint32_t mode = t->modes[dim];

	if (!t->normalized && (mode == 0 || mode == 2))
		mode = 1;
	if (mode == 0)
		return ((i % n) + n) % n;
	if (mode == 2) {
		int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
		return m >= n ? 2 * n - 1 - m : m;
	}
	if (mode == 3 && (i < 0 || i >= n))
		return -1;
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* one texel as 4 words: floats (f) or 64-bit integers (v); 0 on a fault */
static int tex_texel(struct jctx *c, const struct jtex *t, int64_t x, int64_t y, float *f,
		     int64_t *v)
{
	for (int k = 0; k < 4; k++) {
		f[k] = k == 3 ? 1.0f : 0.0f;
		v[k] = k == 3;
	}
	for (uint32_t k = 0; k < t->channels; k++) {
		uint64_t va = t->addr + (uint64_t)y * t->pitch + (uint64_t)x * t->esize * t->channels +
			k * t->esize;
		const uint8_t *p = gptr(c, va, t->esize, GDEV_ACC_READ);
		int64_t iv;
		if (!p)
			return 0;
		switch (t->esize * 4 + t->kind) {
		case 4: iv = *p; break;
		case 5: iv = *(const int8_t *)p; break;
		case 8: iv = *(const uint16_t *)p; break;
		case 9: iv = *(const int16_t *)p; break;
		case 11: f[k] = H2F(*(const uint16_t *)p); continue;
		case 16: iv = *(const uint32_t *)p; break;
		case 17: iv = *(const int32_t *)p; break;
		default: f[k] = U2F(*(const uint32_t *)p); continue;
		}
		if (t->floats) {
			float q = (float)iv / t->norm;
			f[k] = q < -1.0f ? -1.0f : q;
		} else {
			v[k] = iv;
		}
	}
	return 1;
}

/* point sample at texel indices (x, y): the 4 words; 0 on a fault */
static int tex_point(struct jctx *c, const struct jtex *t, int64_t x, int64_t y, int two,
		     float *f, int64_t *v)
{
	int64_t ix = tex_addr(t, x, 0), iy = two ? tex_addr(t, y, 1) : 0;

	if (ix < 0 || iy < 0) {
		for (int k = 0; k < 4; k++) {
			f[k] = t->border[k];
			v[k] = tex_f2i(t->border[k]);
		}
		return 1;
	}
	return tex_texel(c, t, ix, iy, f, v);
}

static inline void tex_weight(float x, int64_t *i, float *a)
{
	/* numpy's nan_to_num: NaN 0, infinities the largest finite floats */
	float xb = (isnan(x) ? 0.0f : isinf(x) ? copysignf(3.40282347e38f, x) : x) - 0.5f;
	double d = (double)xb, fl = floor(d > TEX_LIMIT ? TEX_LIMIT : d < -TEX_LIMIT ? -TEX_LIMIT : d);

	*i = (int64_t)fl;
	*a = (float)(nearbyint((d - fl) * 256.0) / 256.0);
}

/* fetch at coordinates x, y (ints when integer, else floats): 4 result words; 0 on a fault */
static int tex_fetch(struct jctx *c, const struct jtex *t, int integer, int dims, uint32_t cx,
		     uint32_t cy, uint32_t *out)
{
	float f[4], g[4];
	int64_t v[4], w[4];
	int two = t->pitch2d && dims > 1;

	if (integer) {
		int64_t x = (int32_t)cx, y = two ? (int32_t)cy : 0;
		if (!t->pitch2d) {
			if (x < 0 || x >= (int64_t)t->width)	/* outside the buffer: zeros */
				for (int k = 0; k < 4; k++) { f[k] = 0.0f; v[k] = 0; }
			else if (!tex_texel(c, t, x, 0, f, v))
				return 0;
		} else if (!tex_point(c, t, x, y, two, f, v)) {
			return 0;
		}
	} else {
		float x = U2F(cx), y = U2F(cy);
		if (t->normalized) {
			x = x * (float)t->width;
			y = y * (float)t->height;
		}
		if (!t->linear) {
			if (!tex_point(c, t, tex_floor((double)x), tex_floor((double)y), two, f, v))
				return 0;
		} else {
			int64_t i0, j0 = 0;
			float a, b = 0.0f, acc[4] = {0, 0, 0, 0};
			tex_weight(x, &i0, &a);
			if (two)
				tex_weight(y, &j0, &b);
			for (int jj = 0; jj < (two ? 2 : 1); jj++)
				for (int ii = 0; ii < 2; ii++) {
					float wi = ii ? a : 1.0f - a, wj = jj ? b : 1.0f - b;
					float wgt = two ? wi * wj : wi;
					if (!tex_point(c, t, i0 + ii, j0 + jj, two, g, w))
						return 0;
					for (int k = 0; k < 4; k++)
						acc[k] += wgt * g[k];
				}
			for (int k = 0; k < 4; k++)
				f[k] = acc[k];
		}
	}
	for (int k = 0; k < 4; k++)
		out[k] = t->floats ? F2U(f[k]) : (uint32_t)v[k];
	return 1;
}
