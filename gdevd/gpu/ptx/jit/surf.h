/*
 * surf.h - surface loads and stores of compiled kernels (suld.b, sust.b): the interpreter's
 * ops_surf.py in C, the same addresses, boundary modes and faults.  Included by prelude.h
 * after tex.h, whose struct jtex holds the launch's surface objects too (surface = 1).
 *
 * An access is done in two passes over the lanes, as the interpreter does it: every lane's
 * place is found first (surf_locate) and the fault the interpreter would raise, if any, is
 * kept (surf_worse); only then are the elements moved, lane by lane and element by element,
 * stopping at the first that faults in the page table (the earlier ones stay stored, as
 * the MMU's vector store leaves them).
 */

enum { SURF_1D, SURF_2D, SURF_3D, SURF_A1D, SURF_A2D };	/* ops_surf._GEOMETRY's order */
enum { SURF_TRAP, SURF_CLAMP, SURF_ZERO };			/* ops_surf._MODES' order */
/* what surf_locate finds: the place, a lane .zero leaves out, or a fault; the faults in the
 * interpreter's order of precedence within one surface */
enum { SURF_OK, SURF_SKIP, SURF_INVALID, SURF_KIND, SURF_OUT, SURF_MISALIGNED };

/* the surface object of handle h (a texture object is none), or 0 */
static const struct jtex *surf_find(struct jctx *c, uint64_t h)
{
	const struct jtex *t = (const struct jtex *)c->tex;

	for (uint64_t k = 0; k < c->ntex; k++)
		if (t[k].handle == h && t[k].surface)
			return &t[k];
	return 0;
}

/* whether geometry geom reads a surface of shape s (ops_surf._SHAPES) */
static inline int surf_serves(int geom, uint32_t s)
{
	switch (geom) {
	case SURF_1D:
	case SURF_2D: return s == 0;
	case SURF_3D: return s == 1;
	case SURF_A1D: return s == 2;
	default: return s == 3 || s == 4 || s == 5;	/* a2d: layered 2D and cubemaps' faces */
	}
}

static inline int64_t surf_clip(int64_t v, int64_t lo, int64_t hi)
{
	v = v < lo ? lo : v;
	return v > hi ? hi : v;		/* numpy's clip: hi wins when lo > hi */
}

/* numpy's floor division by a positive d */
static inline int64_t surf_floordiv(int64_t v, int64_t d)
{
	return v / d - (v % d != 0 && v < 0);
}

/* one lane's access of size bytes (elements of esize) at byte column x, row y, slice z of
 * the surface of handle h by geometry geom in mode: SURF_OK with *va its address, SURF_SKIP
 * (.zero, out of range), or a fault: SURF_INVALID (no such surface), SURF_KIND (*t a
 * surface of another shape), SURF_OUT (out of range under .trap), SURF_MISALIGNED (*va) */
static int surf_locate(struct jctx *c, uint64_t h, int geom, int32_t x32, int32_t y32,
		       int32_t z32, int64_t size, int64_t esize, int mode,
		       const struct jtex **t, uint64_t *va)
{
	const struct jtex *s = surf_find(c, h);
	int64_t x = x32, y = y32, z = z32, row;
	int out;

	*t = s;
	if (!s)
		return SURF_INVALID;
	if (!surf_serves(geom, s->shape))
		return SURF_KIND;
	row = (int64_t)(s->width * s->esize * s->channels);
	out = x < 0 || x + size > row || y < 0 || y >= (int64_t)s->height || z < 0 ||
	      z >= (int64_t)s->depth;
	if (out && mode == SURF_TRAP)
		return SURF_OUT;
	if (out && mode == SURF_ZERO)
		return SURF_SKIP;
	if (mode == SURF_CLAMP) {
		x = surf_floordiv(surf_clip(x, 0, row - size), esize) * esize;
		y = surf_clip(y, 0, (int64_t)s->height - 1);
		z = surf_clip(z, 0, (int64_t)s->depth - 1);
	}
	*va = s->addr + (uint64_t)(z * (int64_t)s->slice_pitch + y * (int64_t)s->pitch + x);
	return x % esize ? SURF_MISALIGNED : SURF_OK;
}

/* the fault a lane found (r >= SURF_INVALID on handle h) replaces the one kept (*kr on *kh,
 * SURF_OK if none) when the interpreter would raise it first: surfaces in the order of their
 * handles, within one the lower class, within a class the earlier lane (lanes come in order) */
static inline int surf_worse(int r, uint64_t h, int *kr, uint64_t *kh)
{
	if (*kr != SURF_OK && (h > *kh || (h == *kh && r >= *kr)))
		return 0;
	*kr = r;
	*kh = h;
	return 1;
}

/* record the kept fault r (of surface t, geometry geom, address va) for the launch */
static void surf_fault(struct jctx *c, int r, const struct jtex *t, int geom, uint64_t va)
{
	switch (r) {
	case SURF_INVALID: c->fault_kind = F_SURF; c->fault_va = 0; break;
	case SURF_KIND:
		c->fault_kind = F_SURFKIND;
		c->fault_va = (uint64_t)geom * 8 + t->shape;
		break;
	case SURF_OUT: c->fault_kind = F_SURFOUT; c->fault_va = 0; break;
	default: c->fault_kind = F_MISALIGNED; c->fault_va = va; break;
	}
}
