/*
 * heap.h - the device heap's allocator (device malloc/free), shared by the C core (heap.c,
 * which the interpreter calls through cffi) and by compiled kernels (jit/prelude.h includes
 * it), so that both engines hand out the same addresses for the same sequence of calls.
 *
 * Theory of operation
 * -------------------
 * A context's heap is a range [base, base + size) of its own device memory.  The allocator
 * cuts it into 16-byte granules (malloc's alignment) and keeps two bits per granule in
 * daemon memory that no kernel can address: *busy* (the granule belongs to an allocation)
 * and *head* (the granule is the first of one).  An allocation is a head granule followed
 * by busy granules up to the next head or free granule, so its length needs no header in
 * device memory: whatever a kernel writes into the heap, the metadata stays whole, and a
 * free of a pointer malloc never returned (or a second free) is recognised: not a head.
 *
 * malloc searches next-fit from a rover (where the last allocation ended; the start again
 * once the heap is empty), then once from the heap's start: deterministic for a given
 * order of calls.  A malloc that found no room makes every malloc at least as large fail
 * at once until the next free, so a kernel whose threads all ask a full heap costs one
 * search, not one per thread.  One mutex serialises the calls of the engine threads that
 * run blocks of a launch at once.
 */
#ifndef GDEV_HEAP_H
#define GDEV_HEAP_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#define HEAP_GRANULE 16
#define HEAP_ALIGN_MAX 4096	/* __nv_aligned_device_malloc's largest alignment served */

struct gdev_heap {
	pthread_mutex_t lock;
	uint64_t base;		/* device address of granule 0 */
	uint64_t granules;	/* heap size / HEAP_GRANULE */
	uint64_t rover;		/* next-fit: where the search starts */
	uint64_t used;		/* granules allocated */
	uint64_t no_fit;	/* granules of the smallest 16-aligned malloc that found no room
				   since the last free (0: none): larger ones fail at once */
	uint64_t *busy, *head;	/* (granules + 63) / 64 words each */
};

static inline int heap_bit(const uint64_t *map, uint64_t i)
{
	return (int)((map[i >> 6] >> (i & 63)) & 1);
}

/* the first granule in [i, end) whose busy bit equals `want`, else end */
static uint64_t heap_scan(const struct gdev_heap *h, uint64_t i, uint64_t end, int want)
{
	while (i < end) {
		uint64_t w = h->busy[i >> 6];
		if (!want)
			w = ~w;
		w &= ~0ull << (i & 63);
		if (w) {
			uint64_t j = (i & ~63ull) + (uint64_t)__builtin_ctzll(w);
			return j < end ? j : end;
		}
		i = (i | 63) + 1;
	}
	return end;
}

/* set (1) or clear (0) the busy bits of [i, end) */
static void heap_mark(struct gdev_heap *h, uint64_t i, uint64_t end, int set)
{
	for (; i < end && (i & 63); i++)
		h->busy[i >> 6] = set ? h->busy[i >> 6] | (1ull << (i & 63))
				      : h->busy[i >> 6] & ~(1ull << (i & 63));
	for (; i + 64 <= end; i += 64)
		h->busy[i >> 6] = set ? ~0ull : 0;
	for (; i < end; i++)
		h->busy[i >> 6] = set ? h->busy[i >> 6] | (1ull << (i & 63))
				      : h->busy[i >> 6] & ~(1ull << (i & 63));
}

/* a run of n free granules starting at a multiple of a within [from, end), or end */
static uint64_t heap_fit(const struct gdev_heap *h, uint64_t from, uint64_t end, uint64_t n,
			 uint64_t a)
{
	uint64_t i = from;

	for (;;) {
		i = heap_scan(h, i, end, 0);
		i = (i + a - 1) / a * a;
		if (i >= end || end - i < n)
			return end;
		uint64_t j = heap_scan(h, i, i + n, 1);
		if (j == i + n)
			return i;
		i = j + 1;
	}
}

/* device address of n bytes aligned to align (a power of two; at least 16 is given), or 0
 * when n is 0, align is not a power of two up to HEAP_ALIGN_MAX, or no run of free
 * granules is long enough */
static uint64_t heap_alloc(struct gdev_heap *h, uint64_t n, uint64_t align)
{
	uint64_t g, a, at;

	if (!h || !n || n > h->granules * HEAP_GRANULE || !align || align > HEAP_ALIGN_MAX ||
	    (align & (align - 1)))
		return 0;
	g = (n + HEAP_GRANULE - 1) / HEAP_GRANULE;
	a = align > HEAP_GRANULE ? align / HEAP_GRANULE : 1;
	pthread_mutex_lock(&h->lock);
	if ((h->no_fit && g >= h->no_fit) || g > h->granules - h->used) {
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	at = heap_fit(h, h->rover, h->granules, g, a);
	if (at == h->granules)
		at = heap_fit(h, 0, h->granules, g, a);
	if (at == h->granules && a == 1)
		h->no_fit = h->no_fit && h->no_fit < g ? h->no_fit : g;
	if (at < h->granules) {
		heap_mark(h, at, at + g, 1);
		h->head[at >> 6] |= 1ull << (at & 63);
		h->rover = at + g;
		h->used += g;
	}
	pthread_mutex_unlock(&h->lock);
	return at < h->granules ? h->base + at * HEAP_GRANULE : 0;
}

/* free the allocation at va: 0 (also for va 0, a no-op), or -EINVAL for an address no
 * allocation starts at (not in the heap, inside an allocation, or already freed) */
static int heap_release(struct gdev_heap *h, uint64_t va)
{
	uint64_t i, end;

	if (!va)
		return 0;
	if (!h || va < h->base || (va - h->base) % HEAP_GRANULE ||
	    (va - h->base) / HEAP_GRANULE >= h->granules)
		return -EINVAL;
	i = (va - h->base) / HEAP_GRANULE;
	pthread_mutex_lock(&h->lock);
	if (!heap_bit(h->head, i)) {
		pthread_mutex_unlock(&h->lock);
		return -EINVAL;
	}
	h->head[i >> 6] &= ~(1ull << (i & 63));
	/* invariant: an allocation's granules are busy and only its first is a head */
	for (end = i + 1; end < h->granules && heap_bit(h->busy, end) &&
	     !heap_bit(h->head, end); end++)
		;
	heap_mark(h, i, end, 0);
	h->used -= end - i;
	h->no_fit = 0;
	if (!h->used)
		h->rover = 0;	/* an empty heap starts over: no run is cut at the rover */
	pthread_mutex_unlock(&h->lock);
	return 0;
}

#endif
