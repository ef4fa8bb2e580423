/*
 * tex.h - texture fetches of compiled kernels: the interpreter's texsample.py in C, bit for
 * bit (the same float32 operations in the same order; the 9-bit linear weights rounded half
 * to even as numpy rounds).  Included by prelude.h after xlate.h.
 *
 * The launch hands the kernel a snapshot of its context's texture table (struct jtex, built
 * by launch.py when the launch is prepared; surface objects too, for surf.h); a handle
 * not in it, or a surface's, faults with F_TEX.  Texels are read through gptr(), so texels
 * over unmapped memory fault like a global load.
 */

struct jtex {
	uint64_t handle, addr, width, height, pitch, depth, slice_pitch;
	uint32_t pitch2d, kind, esize, channels;	/* kind: 0 uint, 1 int, 2 float, 3 half */
	uint32_t normalized, read_norm, linear, floats;
	uint32_t shape;		/* texture.SHAPES' index (0 plain, 1 3d, .. 5 acube) */
	uint32_t surface;	/* a surface object (surf.h), which tex does not read */
	uint32_t modes[3];	/* 0 wrap, 1 clamp, 2 mirror, 3 border */
	float norm;
	float border[4];
	uint32_t levels, mip_linear;	/* mip levels (texmip.h) */
	float lod_bias, min_lod, max_lod;
	uint32_t pad2;
};

#define TEX_LIMIT 1099511627776.0	/* 2^40: coordinates beyond it stay far outside */

static const struct jtex *tex_find(struct jctx *c, uint64_t h)
{
	const struct jtex *t = (const struct jtex *)c->tex;

	for (uint64_t k = 0; k < c->ntex; k++)
		if (t[k].handle == h && !t[k].surface)
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
static inline int64_t tex_addr(const struct jtex *t, int64_t i, int dim, int normalized)
{
	int64_t n = (int64_t)(dim == 0 ? t->width : dim == 1 ? t->height : t->depth);
	uint32_t mode = t->modes[dim];

	if (!normalized && (mode == 0 || mode == 2))
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

/* the texel at byte offset off as 4 words: floats (f) or 64-bit integers (v); 0 on a fault */
static int tex_texel(struct jctx *c, const struct jtex *t, uint64_t off, float *f, int64_t *v)
{
	for (int k = 0; k < 4; k++) {
		f[k] = k == 3 ? 1.0f : 0.0f;
		v[k] = k == 3;
	}
	for (uint32_t k = 0; k < t->channels; k++) {
		uint64_t va = t->addr + off + k * t->esize;
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

/* point sample at texel indices idx[0..ndim) of the slice at byte offset base: the 4 words;
 * 0 on a fault.  Invariant: validated geometry and in-range indices keep base + the offset
 * below the texture's span, inside the 40-bit address space */
static int tex_point(struct jctx *c, const struct jtex *t, int ndim, const int64_t *idx,
		     uint64_t base, int normalized, float *f, int64_t *v)
{
	uint64_t off = base;

	for (int d = 0; d < ndim; d++) {
		int64_t j = tex_addr(t, idx[d], d, normalized);
		if (j < 0) {
			for (int k = 0; k < 4; k++) {
				f[k] = t->border[k];
				v[k] = tex_f2i(t->border[k]);
			}
			return 1;
		}
		off += (uint64_t)j * (d == 0 ? t->esize * t->channels : d == 1 ? t->pitch :
				      t->slice_pitch);
	}
	return tex_texel(c, t, off, f, v);
}

static inline void tex_weight(float x, int64_t *i, float *a)
{
	/* numpy's nan_to_num: NaN 0, infinities the largest finite floats */
	float xb = (isnan(x) ? 0.0f : isinf(x) ? copysignf(3.40282347e38f, x) : x) - 0.5f;
	double d = (double)xb, fl = floor(d > TEX_LIMIT ? TEX_LIMIT : d < -TEX_LIMIT ? -TEX_LIMIT : d);

	*i = (int64_t)fl;
	*a = (float)(nearbyint((d - fl) * 256.0) / 256.0);
}

/* the 2^ndim taps around xs blended in float32, dimension 0 fastest; 0 on a fault */
static int tex_linear(struct jctx *c, const struct jtex *t, int ndim, const float *xs,
		      uint64_t base, int normalized, float *f)
{
	int64_t i0[3], idx[3];
	float a[3], g[4], acc[4] = {0, 0, 0, 0};
	int64_t w[4];

	for (int d = 0; d < ndim; d++)
		tex_weight(xs[d], &i0[d], &a[d]);
	for (int q = 0; q < (1 << ndim); q++) {
		float wgt = 1.0f;
		for (int d = 0; d < ndim; d++) {
			int up = (q >> d) & 1;
			float wd = up ? a[d] : 1.0f - a[d];
			wgt = d ? wgt * wd : wd;
			idx[d] = i0[d] + up;
		}
		if (!tex_point(c, t, ndim, idx, base, normalized, g, w))
			return 0;
		for (int k = 0; k < 4; k++)
			acc[k] += wgt * g[k];
	}
	for (int k = 0; k < 4; k++)
		f[k] = acc[k];
	return 1;
}

/* the face of direction (x, y, z) and its normalised face coordinates (texsample.cube_face) */
static int tex_cube(float x, float y, float z, float *s, float *tt)
{
	float ax, ay, az, m, sv, tv;
	int face;

	x = isnan(x) ? 0.0f : x;
	y = isnan(y) ? 0.0f : y;
	z = isnan(z) ? 0.0f : z;
	ax = fabsf(x), ay = fabsf(y), az = fabsf(z);
	if (ax >= ay && ax >= az) {
		face = x >= 0.0f ? 0 : 1;
		m = ax, sv = face ? z : -z, tv = -y;
	} else if (ay >= az) {
		face = y >= 0.0f ? 2 : 3;
		m = ay, sv = x, tv = face == 2 ? z : -z;
	} else {
		face = z >= 0.0f ? 4 : 5;
		m = az, sv = face == 4 ? x : -x, tv = -y;
	}
	*s = (sv / m + 1.0f) / 2.0f;
	*tt = (tv / m + 1.0f) / 2.0f;
	return face;
}

enum { TEX_1D, TEX_2D, TEX_3D, TEX_A1D, TEX_A2D, TEX_CUBE, TEX_ACUBE };	/* geometries */
static const int tex_shape_of[] = {0, 0, 1, 2, 3, 4, 5};	/* the shape each one reads */
static const int tex_dims_of[] = {1, 2, 3, 1, 2, 2, 2};	/* coordinates sampled */

/* the sampled coordinates (xs, or idx when integer) and slice offset of a fetch by geometry
 * geom at coordinate words cw (the instruction's operands, a layer first where it has one) */
static uint64_t tex_coords(const struct jtex *t, int geom, const uint32_t *cw, float *xs,
			   int64_t *idx)
{
	int layered = geom == TEX_A1D || geom == TEX_A2D || geom == TEX_ACUBE;
	int64_t layers = geom == TEX_ACUBE ? (int64_t)t->depth / 6 : (int64_t)t->depth;
	int64_t layer = layered ? (int32_t)cw[0] : 0;
	uint64_t base;

	layer = layer < 0 ? 0 : layer >= layers ? layers - 1 : layer;
	base = (uint64_t)layer * (geom == TEX_ACUBE ? 6 : 1) * t->slice_pitch;
	cw += layered;
	if (geom == TEX_CUBE || geom == TEX_ACUBE) {
		int face = tex_cube(U2F(cw[0]), U2F(cw[1]), U2F(cw[2]), &xs[0], &xs[1]);
		xs[0] = xs[0] * (float)t->width;
		xs[1] = xs[1] * (float)t->width;
		return base + (uint64_t)face * t->slice_pitch;
	}
	for (int d = 0; d < tex_dims_of[geom]; d++) {
		float n = (float)(d == 0 ? t->width : d == 1 ? t->height : t->depth);
		idx[d] = (int32_t)cw[d];
		xs[d] = t->normalized ? U2F(cw[d]) * n : U2F(cw[d]);
	}
	return base;
}

/* fetch by geometry geom at coordinate words cw (ints when integer, else floats): 4 result
 * words; 0 on a fault (F_TEXKIND with fault_va = geom * 8 + shape when the texture has no
 * such geometry) */
static int tex_fetch(struct jctx *c, const struct jtex *t, int integer, int geom,
		     const uint32_t *cw, uint32_t *out)
{
	float f[4], xs[3];
	int64_t v[4], idx[3];
	int ndim = tex_dims_of[geom], norm = t->normalized;
	uint64_t base;

	if ((int)t->shape != tex_shape_of[geom]) {
		c->fault_kind = F_TEXKIND;
		c->fault_va = (uint64_t)geom * 8 + t->shape;
		return 0;
	}
	if (!t->shape)
		ndim = t->pitch2d ? ndim : 1;
	base = tex_coords(t, geom, cw, xs, idx);
	if (geom == TEX_CUBE || geom == TEX_ACUBE)
		norm = 1;
	if (integer && !t->shape && !t->pitch2d) {
		int64_t x = idx[0];
		if (x < 0 || x >= (int64_t)t->width)	/* outside the buffer: zeros */
			for (int k = 0; k < 4; k++) { f[k] = 0.0f; v[k] = 0; }
		else if (!tex_texel(c, t, (uint64_t)x * t->esize * t->channels, f, v))
			return 0;
	} else if (integer) {
		if (!tex_point(c, t, ndim, idx, base, norm, f, v))
			return 0;
	} else if (!t->linear) {
		for (int d = 0; d < ndim; d++)
			idx[d] = tex_floor((double)xs[d]);
		if (!tex_point(c, t, ndim, idx, base, norm, f, v))
			return 0;
	} else if (!tex_linear(c, t, ndim, xs, base, norm, f)) {
		return 0;
	}
	for (int k = 0; k < 4; k++)
		out[k] = t->floats ? F2U(f[k]) : (uint32_t)v[k];
	return 1;
}
