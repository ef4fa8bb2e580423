/*
 * mmu_internal.h - the page-table layout shared by mmu.c, mmu_vec.c and copyengine.c.
 *
 * A virtual page number (28 bits) splits into a level-1 index (high 14 bits) and a level-2
 * index (low 14 bits).  Level-2 tables are allocated on first map and kept until the address
 * space dies, so a reader never sees a freed table.  A PTE is
 *
 *	bits 63..12  physical address of the page inside its aperture
 *	bits  9..4   aperture index
 *	bit      2   valid
 *	bits  1..0   access flags (GDEV_ACC_READ | GDEV_ACC_WRITE)
 *
 * Concurrency: map/unmap/set_aperture take the rwlock for writing; every access path holds
 * it for reading for one call (one chunk for copy engines), so an unmap waits for in-flight
 * accesses instead of pulling memory from under them.
 */
#ifndef GDEV_MMU_INTERNAL_H
#define GDEV_MMU_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "gdev_core.h"

#define L2_BITS 14
#define L1_ENTRIES (1u << (GDEV_VA_BITS - GDEV_PAGE_SHIFT - L2_BITS))
#define L2_ENTRIES (1u << L2_BITS)
#define VA_LIMIT (1ull << GDEV_VA_BITS)
#define PAGE_MASK ((uint64_t)GDEV_PAGE_SIZE - 1)

#define PTE_VALID 4ull
#define PTE_ACC 3ull
#define PTE_AP_SHIFT 4
#define PTE_AP_MASK 63ull

struct aperture {
	uint8_t *base;
	uint64_t size;
	uint64_t mapped; /* pages mapping it: an aperture in use cannot be replaced */
};

struct gdev_mmu {
	pthread_rwlock_t lock;
	int refs;
	uint64_t pages;
	struct aperture ap[GDEV_APERTURES];
	uint64_t *l1[L1_ENTRIES];
};

/* the PTE of va, or 0 (callers hold the lock; va < VA_LIMIT) */
static inline uint64_t pte_of(const struct gdev_mmu *mmu, uint64_t va)
{
	const uint64_t *l2 = mmu->l1[va >> (GDEV_PAGE_SHIFT + L2_BITS)];

	return l2 ? l2[(va >> GDEV_PAGE_SHIFT) & (L2_ENTRIES - 1)] : 0;
}

/* host pointer of va with access, or NULL (callers hold the lock) */
static inline uint8_t *host_of(const struct gdev_mmu *mmu, uint64_t va, int access)
{
	uint64_t pte;

	if (va >= VA_LIMIT)
		return 0;
	pte = pte_of(mmu, va);
	if (!(pte & PTE_VALID) || (pte & (uint64_t)access) != (uint64_t)access)
		return 0;
	return mmu->ap[(pte >> PTE_AP_SHIFT) & PTE_AP_MASK].base + (pte & ~PAGE_MASK) +
	       (va & PAGE_MASK);
}

/* -EFAULT if va is unmapped, -EACCES if mapped without access, else 0 (lock held) */
int mmu_fault_kind(const struct gdev_mmu *mmu, uint64_t va, int access);

/* copy between host memory and [va, va+size) page run by page run (lock held, range
 * checked by the caller; a page that vanished anyway stops it with -EFAULT/-EACCES and
 * *fault_va).  stream: writes to the device bypass the cache (copy-engine stages) */
int mmu_copy_locked(struct gdev_mmu *mmu, uint64_t va, void *host, uint64_t size, int to_dev,
		    int stream, uint64_t *fault_va);

#endif
