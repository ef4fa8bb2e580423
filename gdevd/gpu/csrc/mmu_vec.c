/*
 * mmu_vec.c - vector accesses for the compute engine: translate, load, store, atomics.
 *
 * Each function holds the page table's read lock for the whole vector, processes elements
 * in index order and stops at the first faulting one, returning its index (-1 if none).
 * Elements must be naturally aligned, so no element crosses a page.  Atomics are real
 * atomic read-modify-writes (a compare-and-swap loop), so they stay atomic against other
 * threads running kernels on shared memory.
 */
#include <errno.h>
#include <string.h>

#include "mmu_internal.h"

int64_t gdev_mmu_translate_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n,
			     int access, uint64_t *out)
{
	uint64_t i, va, pte;
	int64_t ret = -1;

	pthread_rwlock_rdlock(&mmu->lock);
	for (i = 0; i < n; i++) {
		va = vas[i];
		pte = va < VA_LIMIT ? pte_of(mmu, va) : 0;
		if (!(pte & PTE_VALID) || (pte & (uint64_t)access) != (uint64_t)access) {
			ret = (int64_t)i;
			break;
		}
		out[i] = (((pte >> PTE_AP_SHIFT) & PTE_AP_MASK) << 48) | (pte & ~PAGE_MASK) |
			 (va & PAGE_MASK);
	}
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

/* move n elements of W bytes between the address space and a packed array */
#define VEC_LOOP(W, ACCESS, MOVE)                                                      \
	for (i = 0; i < n; i++) {                                                      \
		p = (vas[i] & ((W) - 1)) ? 0 : host_of(mmu, vas[i], ACCESS);           \
		if (!p)                                                                \
			return (int64_t)i;                                             \
		MOVE;                                                                  \
	}                                                                              \
	return -1

static int64_t load_locked(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			   uint8_t *out)
{
	uint64_t i;
	uint8_t *p;

	switch (width) {
	case 1: VEC_LOOP(1, GDEV_ACC_READ, out[i] = *p);
	case 2: VEC_LOOP(2, GDEV_ACC_READ, memcpy(out + 2 * i, p, 2));
	case 4: VEC_LOOP(4, GDEV_ACC_READ, memcpy(out + 4 * i, p, 4));
	case 8: VEC_LOOP(8, GDEV_ACC_READ, memcpy(out + 8 * i, p, 8));
	case 16: VEC_LOOP(16, GDEV_ACC_READ, memcpy(out + 16 * i, p, 16));
	}
	return -1 - EINVAL;
}

static int64_t store_locked(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			    const uint8_t *in)
{
	uint64_t i;
	uint8_t *p;

	switch (width) {
	case 1: VEC_LOOP(1, GDEV_ACC_WRITE, *p = in[i]);
	case 2: VEC_LOOP(2, GDEV_ACC_WRITE, memcpy(p, in + 2 * i, 2));
	case 4: VEC_LOOP(4, GDEV_ACC_WRITE, memcpy(p, in + 4 * i, 4));
	case 8: VEC_LOOP(8, GDEV_ACC_WRITE, memcpy(p, in + 8 * i, 8));
	case 16: VEC_LOOP(16, GDEV_ACC_WRITE, memcpy(p, in + 16 * i, 16));
	}
	return -1 - EINVAL;
}

int64_t gdev_mmu_load_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			void *out)
{
	int64_t ret;

	pthread_rwlock_rdlock(&mmu->lock);
	ret = load_locked(mmu, vas, n, width, out);
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int64_t gdev_mmu_store_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			 const void *values)
{
	int64_t ret;

	pthread_rwlock_rdlock(&mmu->lock);
	ret = store_locked(mmu, vas, n, width, values);
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

/* ----- atomics ------------------------------------------------------------------------ */

static int type_width(int typ)
{
	return (typ == GDEV_T_U32 || typ == GDEV_T_S32 || typ == GDEV_T_F32) ? 4 : 8;
}

static int valid_op(int op, int typ)
{
	if (typ < GDEV_T_U32 || typ > GDEV_T_F64 || op < GDEV_ATOM_ADD || op > GDEV_ATOM_DEC)
		return 0;
	if (typ == GDEV_T_F32 || typ == GDEV_T_F64)
		return op == GDEV_ATOM_ADD || op == GDEV_ATOM_EXCH;
	return 1;
}

/* the new value of an integer atomic; S: the signed type, U: the unsigned one */
#define INT_RMW(T, old, a, b)                                                          \
	switch (op) {                                                                  \
	case GDEV_ATOM_ADD: return (T)(old + a);                                       \
	case GDEV_ATOM_MIN: return old < a ? old : a;                                  \
	case GDEV_ATOM_MAX: return old > a ? old : a;                                  \
	case GDEV_ATOM_EXCH: return a;                                                 \
	case GDEV_ATOM_CAS: return old == a ? b : old;                                 \
	case GDEV_ATOM_AND: return old & a;                                            \
	case GDEV_ATOM_OR: return old | a;                                             \
	case GDEV_ATOM_XOR: return old ^ a;                                            \
	case GDEV_ATOM_INC: return old >= a ? 0 : (T)(old + 1);                        \
	default: return (old == 0 || old > a) ? a : (T)(old - 1);                      \
	}

static uint32_t rmw_u32(int op, uint32_t old, uint32_t a, uint32_t b) { INT_RMW(uint32_t, old, a, b) }
static int32_t rmw_s32(int op, int32_t old, int32_t a, int32_t b)
{
	switch (op) { /* signed add/inc/dec wrap like the unsigned bits */
	case GDEV_ATOM_ADD: return (int32_t)((uint32_t)old + (uint32_t)a);
	case GDEV_ATOM_INC: return old >= a ? 0 : (int32_t)((uint32_t)old + 1);
	case GDEV_ATOM_DEC: return (old == 0 || old > a) ? a : (int32_t)((uint32_t)old - 1);
	}
	INT_RMW(int32_t, old, a, b)
}
static uint64_t rmw_u64(int op, uint64_t old, uint64_t a, uint64_t b) { INT_RMW(uint64_t, old, a, b) }
static int64_t rmw_s64(int op, int64_t old, int64_t a, int64_t b)
{
	switch (op) {
	case GDEV_ATOM_ADD: return (int64_t)((uint64_t)old + (uint64_t)a);
	case GDEV_ATOM_INC: return old >= a ? 0 : (int64_t)((uint64_t)old + 1);
	case GDEV_ATOM_DEC: return (old == 0 || old > a) ? a : (int64_t)((uint64_t)old - 1);
	}
	INT_RMW(int64_t, old, a, b)
}

/* new bits of a 32-bit element from old bits and operand bits */
static uint32_t rmw32(int op, int typ, uint32_t old, uint32_t a, uint32_t b)
{
	float f, fa;

	if (typ == GDEV_T_U32)
		return rmw_u32(op, old, a, b);
	if (typ == GDEV_T_S32)
		return (uint32_t)rmw_s32(op, (int32_t)old, (int32_t)a, (int32_t)b);
	if (op == GDEV_ATOM_EXCH)
		return a;
	memcpy(&f, &old, 4);
	memcpy(&fa, &a, 4);
	f += fa;
	memcpy(&old, &f, 4);
	return old;
}

static uint64_t rmw64(int op, int typ, uint64_t old, uint64_t a, uint64_t b)
{
	double f, fa;

	if (typ == GDEV_T_U64)
		return rmw_u64(op, old, a, b);
	if (typ == GDEV_T_S64)
		return (uint64_t)rmw_s64(op, (int64_t)old, (int64_t)a, (int64_t)b);
	if (op == GDEV_ATOM_EXCH)
		return a;
	memcpy(&f, &old, 8);
	memcpy(&fa, &a, 8);
	f += fa;
	memcpy(&old, &f, 8);
	return old;
}

/* one atomic RMW of element i at p (aligned); a/b/old are arrays of the type's width */
static void atomic_one(uint8_t *p, int op, int typ, const uint8_t *a, const uint8_t *b,
		       uint8_t *old, uint64_t i)
{
	uint32_t c32, a32, b32 = 0;
	uint64_t c64, a64, b64 = 0;

	if (type_width(typ) == 4) {
		memcpy(&a32, a + 4 * i, 4);
		if (b)
			memcpy(&b32, b + 4 * i, 4);
		c32 = __atomic_load_n((uint32_t *)p, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n((uint32_t *)p, &c32,
						    rmw32(op, typ, c32, a32, b32), 1,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		memcpy(old + 4 * i, &c32, 4);
		return;
	}
	memcpy(&a64, a + 8 * i, 8);
	if (b)
		memcpy(&b64, b + 8 * i, 8);
	c64 = __atomic_load_n((uint64_t *)p, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n((uint64_t *)p, &c64, rmw64(op, typ, c64, a64, b64),
					    1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	memcpy(old + 8 * i, &c64, 8);
}

int64_t gdev_mmu_atomic_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int op,
			  int typ, const void *a, const void *b, void *old)
{
	uint64_t i, w;
	uint8_t *p;
	int64_t ret = -1;

	if (!valid_op(op, typ) || (op == GDEV_ATOM_CAS && !b))
		return -1 - EINVAL;
	w = (uint64_t)type_width(typ);
	pthread_rwlock_rdlock(&mmu->lock);
	for (i = 0; i < n; i++) {
		p = (vas[i] & (w - 1)) ? 0 : host_of(mmu, vas[i], GDEV_ACC_READ | GDEV_ACC_WRITE);
		if (!p) {
			ret = (int64_t)i;
			break;
		}
		atomic_one(p, op, typ, a, b, old, i);
	}
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int64_t gdev_flat_atomic_v(void *buf, uint64_t size, const uint64_t *offs, uint64_t n,
			   int op, int typ, const void *a, const void *b, void *old)
{
	uint64_t i, w;

	if (!valid_op(op, typ) || (op == GDEV_ATOM_CAS && !b))
		return -1 - EINVAL;
	w = (uint64_t)type_width(typ);
	for (i = 0; i < n; i++) {
		if ((offs[i] & (w - 1)) || offs[i] >= size || size - offs[i] < w)
			return (int64_t)i;
		atomic_one((uint8_t *)buf + offs[i], op, typ, a, b, old, i);
	}
	return -1;
}
