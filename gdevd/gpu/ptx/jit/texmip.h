/*
 * texmip.h - mip levels, explicit level of detail, gradients and gather of compiled
 * kernels: the interpreter's texmip.py in C, bit for bit (the same float32 operations in the
 * same order, the C library's log2 in double as CPython's math.log2 calls it, 8-bit
 * fractions rounded half to even as numpy's rint).  Included by prelude.h after tex.h.
 */

/* level lv of t: texture.py mip_layout (width and height halve, floored, at least 1;
 * the depth only in 3D; every level packed after the one before) */
static void tex_level(const struct jtex *t, uint32_t lv, struct jtex *o)
{
	uint64_t texel = (uint64_t)t->esize * t->channels, off = 0, w, h, d;

	*o = *t;
	if (t->levels <= 1)	/* one level: its own pitches, packed or not */
		return;
	for (uint32_t k = 0;; k++) {
		w = t->width >> k ? t->width >> k : 1;
		h = t->height >> k ? t->height >> k : 1;
		d = t->shape == 1 ? (t->depth >> k ? t->depth >> k : 1) : t->depth;
		if (k == lv)
			break;
		off += w * texel * h * d;
	}
	o->addr = t->addr + off;
	o->width = w, o->height = h, o->depth = d;
	o->pitch = w * texel;
	o->slice_pitch = t->shape ? w * texel * h : 0;
	o->levels = 1;
}

/* the LOD (NaN as 0) plus the bias, clamped by the descriptor and the levels */
static inline float tex_clamp_lod(const struct jtex *t, float lod)
{
	float top = (float)(t->levels - 1);

	lod = (isnan(lod) ? 0.0f : lod) + t->lod_bias;
	lod = lod < t->min_lod ? t->min_lod : lod;
	lod = lod > t->max_lod ? t->max_lod : lod;
	lod = lod < 0.0f ? 0.0f : lod;
	return lod > top ? top : lod;
}

static const int tex_grad_dims[] = {1, 2, 3, 1, 2, 3, 3};	/* GEOMETRIES' sampled dims */

/* the LOD of gradients dx, dy (texmip.grad_lod) */
static float tex_grad_lod(const struct jtex *t, int geom, const float *dx, const float *dy)
{
	int cube = geom == TEX_CUBE || geom == TEX_ACUBE;
	float rho[2], r;
	double lg;

	for (int v = 0; v < 2; v++) {
		const float *g = v ? dy : dx;
		float acc = 0.0f;
		for (int k = 0; k < tex_grad_dims[geom]; k++) {
			uint64_t n = cube || k == 0 ? t->width : k == 1 ? t->height : t->depth;
			float p = g[k] * (cube || t->normalized ? (float)n : 1.0f);
			acc = k ? acc + p * p : p * p;
		}
		rho[v] = acc;
	}
	r = isnan(rho[0]) || isnan(rho[1]) ? NAN : rho[0] > rho[1] ? rho[0] : rho[1];
	lg = isnan(r) ? NAN : r == 0.0f ? -INFINITY : log2((double)r);
	return (float)(nearbyint(lg * 128.0) / 256.0);
}

/* a fetch from level lv: unnormalised float coordinates scaled by 2^-lv */
static int tex_fetch_level(struct jctx *c, const struct jtex *t, int integer, int geom,
			   const uint32_t *cw, uint32_t lv, uint32_t *out)
{
	int layered = geom == TEX_A1D || geom == TEX_A2D || geom == TEX_ACUBE;
	struct jtex lt;
	uint32_t w[4];

	tex_level(t, lv, &lt);
	memcpy(w, cw, sizeof w);
	if (lv && !integer && !t->normalized && geom != TEX_CUBE && geom != TEX_ACUBE)
		for (int d = 0; d < tex_dims_of[geom]; d++)
			w[layered + d] = F2U(U2F(w[layered + d]) * ldexpf(1.0f, -(int)lv));
	return tex_fetch(c, &lt, integer, geom, w, out);
}

/* fetch at level of detail lod, choosing and blending levels (texmip.fetch_lod) */
static int tex_fetch_lod(struct jctx *c, const struct jtex *t, int integer, int geom,
			 const uint32_t *cw, float lod, uint32_t *out)
{
	uint32_t a[4], b[4], l0, l1;
	float lo, f;

	if (t->levels <= 1)
		return tex_fetch(c, t, integer, geom, cw, out);
	lod = tex_clamp_lod(t, lod);
	if (!t->mip_linear)
		return tex_fetch_level(c, t, integer, geom, cw, (uint32_t)floorf(lod + 0.5f), out);
	lo = floorf(lod);
	f = (float)(nearbyint((double)(lod - lo) * 256.0) / 256.0);
	l0 = (uint32_t)lo;
	l1 = l0 + 1 < t->levels ? l0 + 1 : l0;
	if (!tex_fetch_level(c, t, integer, geom, cw, l0, a) ||
	    !tex_fetch_level(c, t, integer, geom, cw, l1, b))
		return 0;
	for (int k = 0; k < 4; k++)
		out[k] = F2U((1.0f - f) * U2F(a[k]) + f * U2F(b[k]));
	return 1;
}

/* tld4: component comp of the bilinear footprint at level 0 (texmip.gather) */
static int tex_gather(struct jctx *c, const struct jtex *t, int geom, const uint32_t *cw,
		      int comp, uint32_t *out)
{
	static const int taps[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
	struct jtex lt;
	float f[4], xs[3], a;
	int64_t v[4], idx[3], i0[2];
	uint64_t base;

	if ((int)t->shape != tex_shape_of[geom]) {
		c->fault_kind = F_TEXKIND;
		c->fault_va = (uint64_t)geom * 8 + t->shape;
		return 0;
	}
	tex_level(t, 0, &lt);
	base = tex_coords(&lt, geom, cw, xs, idx);
	tex_weight(xs[0], &i0[0], &a);
	tex_weight(xs[1], &i0[1], &a);
	for (int q = 0; q < 4; q++) {
		idx[0] = i0[0] + taps[q][0];
		idx[1] = i0[1] + taps[q][1];
		if (!tex_point(c, &lt, 2, idx, base, lt.normalized, f, v))
			return 0;
		out[q] = lt.floats ? F2U(f[comp]) : (uint32_t)v[comp];
	}
	return 1;
}
