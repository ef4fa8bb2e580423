/* vram.c - a device's physical memory: a lazily backed anonymous mapping. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "gdev_core.h"

int gdev_vram_alloc(uint64_t size, void **out)
{
	void *p;

	if (!size || (size & (GDEV_PAGE_SIZE - 1)))
		return -EINVAL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* huge pages where the kernel has them (best effort): far fewer TLB misses and first-touch
	 * faults on the copy engines' streams; still committed only when touched */
	(void)madvise(p, size, MADV_HUGEPAGE);
	*out = p;
	return 0;
}

int gdev_vram_free(void *base, uint64_t size)
{
	return munmap(base, size) ? -errno : 0;
}
