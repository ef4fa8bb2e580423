/* mmu.c - page tables: create/destroy, apertures, map/unmap, translate, direct copies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mmu_internal.h"
#include "stream.h"

int gdev_mmu_create(struct gdev_mmu **out)
{
	struct gdev_mmu *mmu = calloc(1, sizeof(*mmu));

	if (!mmu)
		return -ENOMEM;
	if (pthread_rwlock_init(&mmu->lock, NULL))
		goto free_mmu;
	mmu->refs = 1;
	*out = mmu;
	return 0;
free_mmu:
	free(mmu);
	return -ENOMEM;
}

void gdev_mmu_get(struct gdev_mmu *mmu)
{
	__atomic_add_fetch(&mmu->refs, 1, __ATOMIC_RELAXED);
}

void gdev_mmu_put(struct gdev_mmu *mmu)
{
	unsigned i;

	if (__atomic_sub_fetch(&mmu->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (i = 0; i < L1_ENTRIES; i++)
		free(mmu->l1[i]);
	pthread_rwlock_destroy(&mmu->lock);
	free(mmu);
}

int gdev_mmu_set_aperture(struct gdev_mmu *mmu, int idx, void *base, uint64_t size)
{
	int ret = 0;

	if (idx < 0 || idx >= GDEV_APERTURES || (base && (size & PAGE_MASK)))
		return -EINVAL;
	pthread_rwlock_wrlock(&mmu->lock);
	if (mmu->ap[idx].mapped) {
		ret = -EBUSY;
		goto unlock;
	}
	mmu->ap[idx].base = base;
	mmu->ap[idx].size = base ? size : 0;
unlock:
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

/* argument checks shared by map (ap >= 0) and unmap (ap < 0); lock held */
static int check_range(const struct gdev_mmu *mmu, uint64_t va, uint64_t pa, uint64_t size,
		       int ap, int flags)
{
	if (!size || ((va | size) & PAGE_MASK))
		return -EINVAL;
	if (va >= VA_LIMIT || size > VA_LIMIT - va)
		return -ERANGE;
	if (ap < 0)
		return 0;
	if (ap >= GDEV_APERTURES || !mmu->ap[ap].base || (pa & PAGE_MASK) || !flags ||
	    (flags & ~(int)PTE_ACC))
		return -EINVAL;
	if (pa >= mmu->ap[ap].size || size > mmu->ap[ap].size - pa)
		return -ERANGE;
	return 0;
}

/* make sure every level-2 table under [va, va+size) exists (lock held for writing) */
static int alloc_tables(struct gdev_mmu *mmu, uint64_t va, uint64_t size)
{
	uint64_t first = va >> (GDEV_PAGE_SHIFT + L2_BITS);
	uint64_t last = (va + size - 1) >> (GDEV_PAGE_SHIFT + L2_BITS);

	for (; first <= last; first++) {
		if (mmu->l1[first])
			continue;
		mmu->l1[first] = calloc(L2_ENTRIES, sizeof(uint64_t));
		if (!mmu->l1[first])
			return -ENOMEM;
	}
	return 0;
}

static void set_pte(struct gdev_mmu *mmu, uint64_t va, uint64_t pte)
{
	mmu->l1[va >> (GDEV_PAGE_SHIFT + L2_BITS)][(va >> GDEV_PAGE_SHIFT) & (L2_ENTRIES - 1)] =
		pte;
}

int gdev_mmu_map(struct gdev_mmu *mmu, uint64_t va, uint64_t pa, uint64_t size, int ap,
		 int flags)
{
	uint64_t off, npages = size >> GDEV_PAGE_SHIFT;
	int ret;

	pthread_rwlock_wrlock(&mmu->lock);
	ret = check_range(mmu, va, pa, size, ap, flags);
	if (ret)
		goto unlock;
	for (off = 0; off < size; off += GDEV_PAGE_SIZE) {
		if (pte_of(mmu, va + off) & PTE_VALID) {
			ret = -EEXIST;
			goto unlock;
		}
	}
	ret = alloc_tables(mmu, va, size);
	if (ret)
		goto unlock;
	for (off = 0; off < size; off += GDEV_PAGE_SIZE)
		set_pte(mmu, va + off, (pa + off) | ((uint64_t)ap << PTE_AP_SHIFT) | PTE_VALID |
					       (uint64_t)flags);
	mmu->ap[ap].mapped += npages;
	mmu->pages += npages;
unlock:
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int gdev_mmu_unmap(struct gdev_mmu *mmu, uint64_t va, uint64_t size)
{
	uint64_t off, pte;
	int ret;

	pthread_rwlock_wrlock(&mmu->lock);
	ret = check_range(mmu, va, 0, size, -1, 0);
	if (ret)
		goto unlock;
	for (off = 0; off < size; off += GDEV_PAGE_SIZE) {
		if (!(pte_of(mmu, va + off) & PTE_VALID)) {
			ret = -ENOENT;
			goto unlock;
		}
	}
	for (off = 0; off < size; off += GDEV_PAGE_SIZE) {
		pte = pte_of(mmu, va + off);
		mmu->ap[(pte >> PTE_AP_SHIFT) & PTE_AP_MASK].mapped--;
		set_pte(mmu, va + off, 0);
	}
	mmu->pages -= size >> GDEV_PAGE_SHIFT;
unlock:
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int mmu_fault_kind(const struct gdev_mmu *mmu, uint64_t va, int access)
{
	uint64_t pte;

	if (va >= VA_LIMIT)
		return -EFAULT;
	pte = pte_of(mmu, va);
	if (!(pte & PTE_VALID))
		return -EFAULT;
	return ((pte & (uint64_t)access) == (uint64_t)access) ? 0 : -EACCES;
}

int gdev_mmu_translate(struct gdev_mmu *mmu, uint64_t va, int access, int *ap, uint64_t *pa)
{
	uint64_t pte;
	int ret;

	pthread_rwlock_rdlock(&mmu->lock);
	ret = mmu_fault_kind(mmu, va, access);
	if (!ret) {
		pte = pte_of(mmu, va);
		*ap = (int)((pte >> PTE_AP_SHIFT) & PTE_AP_MASK);
		*pa = (pte & ~PAGE_MASK) | (va & PAGE_MASK);
	}
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

/* gdev_mmu_check with the lock held: the first bad byte is reported, pages past the
 * 40-bit limit count as unmapped */
static int check_locked(const struct gdev_mmu *mmu, uint64_t va, uint64_t size, int access,
			uint64_t *fault_va)
{
	uint64_t page, end;
	int ret;

	if (!size)
		return 0;
	end = (va >= VA_LIMIT || size > VA_LIMIT - va) ? VA_LIMIT + GDEV_PAGE_SIZE : va + size;
	for (page = va & ~PAGE_MASK; page < end; page += GDEV_PAGE_SIZE) {
		ret = mmu_fault_kind(mmu, page, access);
		if (ret) {
			*fault_va = page < va ? va : page;
			return ret;
		}
	}
	return 0;
}

int gdev_mmu_check(struct gdev_mmu *mmu, uint64_t va, uint64_t size, int access,
		   uint64_t *fault_va)
{
	int ret;

	pthread_rwlock_rdlock(&mmu->lock);
	ret = check_locked(mmu, va, size, access, fault_va);
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int mmu_copy_locked(struct gdev_mmu *mmu, uint64_t va, void *host, uint64_t size, int to_dev,
		    int stream, uint64_t *fault_va)
{
	uint8_t *h = host, *run, *next;
	uint64_t len, step;
	int access = to_dev ? GDEV_ACC_WRITE : GDEV_ACC_READ;

	while (size) {
		run = host_of(mmu, va, access);
		if (!run) {
			*fault_va = va;
			return mmu_fault_kind(mmu, va, access);
		}
		len = GDEV_PAGE_SIZE - (va & PAGE_MASK);
		len = len < size ? len : size;
		/* coalesce physically contiguous pages into one memcpy */
		while (len < size && (next = host_of(mmu, va + len, access)) == run + len) {
			step = size - len < GDEV_PAGE_SIZE ? size - len : GDEV_PAGE_SIZE;
			len += step;
		}
		if (stream)
			gdev_stream_copy(to_dev ? run : h, to_dev ? (const uint8_t *)h : run, len);
		else
			memcpy(to_dev ? run : h, to_dev ? (const uint8_t *)h : run, len);
		h += len;
		va += len;
		size -= len;
	}
	return 0;
}

/* the direct path in one direction, checked first */
static int direct(struct gdev_mmu *mmu, uint64_t va, void *host, uint64_t size, int to_dev,
		  uint64_t *fault_va)
{
	int ret;

	pthread_rwlock_rdlock(&mmu->lock);
	ret = check_locked(mmu, va, size, to_dev ? GDEV_ACC_WRITE : GDEV_ACC_READ, fault_va);
	if (!ret)
		ret = mmu_copy_locked(mmu, va, host, size, to_dev, 0, fault_va);
	pthread_rwlock_unlock(&mmu->lock);
	return ret;
}

int gdev_mmu_read(struct gdev_mmu *mmu, uint64_t va, void *dst, uint64_t size,
		  uint64_t *fault_va)
{
	return direct(mmu, va, dst, size, 0, fault_va);
}

int gdev_mmu_write(struct gdev_mmu *mmu, uint64_t va, const void *src, uint64_t size,
		   uint64_t *fault_va)
{
	return direct(mmu, va, (void *)src, size, 1, fault_va);
}

uint64_t gdev_mmu_mapped_pages(struct gdev_mmu *mmu)
{
	uint64_t n;

	pthread_rwlock_rdlock(&mmu->lock);
	n = mmu->pages;
	pthread_rwlock_unlock(&mmu->lock);
	return n;
}
