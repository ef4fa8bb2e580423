/* heap.c - the device heap's exported face (gdev_core.h); the allocator is heap.h. */
#include <stdlib.h>

#include "heap.h"
#include "gdev_core.h"

int gdev_heap_create(uint64_t base, uint64_t size, struct gdev_heap **out)
{
	struct gdev_heap *h;
	uint64_t words;

	if (!out || !size || size % HEAP_GRANULE || base % HEAP_ALIGN_MAX)
		return -EINVAL;
	words = (size / HEAP_GRANULE + 63) / 64;
	h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->busy = calloc(words, sizeof *h->busy);
	if (!h->busy)
		goto free_heap;
	h->head = calloc(words, sizeof *h->head);
	if (!h->head)
		goto free_busy;
	if (pthread_mutex_init(&h->lock, NULL))
		goto free_head;
	h->base = base;
	h->granules = size / HEAP_GRANULE;
	*out = h;
	return 0;
free_head:
	free(h->head);
free_busy:
	free(h->busy);
free_heap:
	free(h);
	return -ENOMEM;
}

void gdev_heap_destroy(struct gdev_heap *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->lock);
	free(h->head);
	free(h->busy);
	free(h);
}

uint64_t gdev_heap_alloc(struct gdev_heap *h, uint64_t size, uint64_t align)
{
	return heap_alloc(h, size, align);
}

int gdev_heap_free(struct gdev_heap *h, uint64_t va)
{
	return heap_release(h, va);
}

uint64_t gdev_heap_used(struct gdev_heap *h)
{
	uint64_t used;

	pthread_mutex_lock(&h->lock);
	used = h->used * HEAP_GRANULE;
	pthread_mutex_unlock(&h->lock);
	return used;
}
