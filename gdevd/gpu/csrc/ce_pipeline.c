/*
 * ce_pipeline.c - synchronous copies through a copy engine (the paper's split transaction).
 *
 * A host<->device copy is split into chunks that flow through ``depth`` slots of the
 * caller's bounce buffer.  Host to device: the caller copies chunk k into slot k % depth
 * while the engine drains earlier slots into device memory.  Device to host: the engine
 * fills every slot first, then the caller drains slot k while the engine refills the
 * others.  Depth 1 is the unpipelined copy -> DMA -> wait loop.  Stage jobs live in an
 * array on the caller's stack, and every exit path drains them first, so no chunk
 * allocates and no queued job outlives the call.  A page that vanishes after the initial
 * validation (a concurrent unmap) stops the copy with that page's fault; stages already
 * queued behind the failing one (at most depth - 1) still run, as on hardware.
 */
#include <errno.h>
#include <string.h>

#include "ce_internal.h"
#include "stream.h"

struct pipe {
	struct gdev_ce *ce;
	struct job slot[GDEV_DEPTH_MAX];
	int busy[GDEV_DEPTH_MAX];
	int depth, err;
	uint64_t fault_va;
};

/* queue slot s's stage; ``more``: stages of this copy follow it (the engine may spin) */
static void stage(struct pipe *p, int s, int kind, struct gdev_mmu *mmu, uint64_t va,
		  uint8_t *host, uint64_t size, int more)
{
	struct job *j = &p->slot[s];

	memset(j, 0, sizeof(*j));
	j->kind = kind;
	j->dst = j->src = mmu;
	j->dst_va = j->src_va = va;
	j->host = host;
	j->size = size;
	j->more = more;
	p->busy[s] = 1;
	ce_push(p->ce, j);
}

/* wait for slot s; the first failure is kept in p->err / p->fault_va */
static int settle(struct pipe *p, int s)
{
	int err;

	if (!p->busy[s])
		return p->err;
	p->busy[s] = 0;
	err = ce_wait_job(p->ce, &p->slot[s]);
	if (err && !p->err) {
		p->err = err;
		p->fault_va = p->slot[s].fault_va;
	}
	return p->err;
}

/* wait for every queued stage (all exits go through here); returns the first error */
static int drain(struct pipe *p, uint64_t *fault_va)
{
	int s;

	for (s = 0; s < p->depth; s++)
		settle(p, s);
	if (p->err)
		*fault_va = p->fault_va;
	return p->err;
}

static int setup(struct pipe *p, struct gdev_ce *ce, uint64_t chunk, int depth,
		 uint64_t bounce_size)
{
	memset(p, 0, sizeof(*p));
	p->ce = ce;
	p->depth = depth;
	if (chunk < GDEV_CHUNK_MIN || chunk > GDEV_CHUNK_MAX || depth < 1 ||
	    depth > GDEV_DEPTH_MAX || bounce_size < chunk * (uint64_t)depth)
		return -EINVAL;
	return 0;
}

int gdev_ce_htod(struct gdev_ce *ce, struct gdev_mmu *mmu, uint64_t dst_va, const void *src,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va)
{
	struct pipe p;
	uint64_t off, len, k;
	uint8_t *slot;
	int s, ret = setup(&p, ce, chunk, depth, bounce_size);

	if (!ret)
		ret = gdev_mmu_check(mmu, dst_va, size, GDEV_ACC_WRITE, fault_va);
	if (ret)
		return ret;
	for (off = 0, k = 0; off < size; off += len, k++) {
		s = (int)(k % (uint64_t)depth);
		if (settle(&p, s))
			break;
		len = size - off < chunk ? size - off : chunk;
		slot = (uint8_t *)bounce + (uint64_t)s * chunk;
		gdev_stream_copy(slot, (const uint8_t *)src + off, len);
		stage(&p, s, GDEV_CE_HTOD, mmu, dst_va + off, slot, len, off + len < size);
	}
	return drain(&p, fault_va);
}

int gdev_ce_dtoh(struct gdev_ce *ce, struct gdev_mmu *mmu, void *dst, uint64_t src_va,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va)
{
	struct pipe p;
	uint64_t issue, off, len;
	uint8_t *slot;
	int s, ret = setup(&p, ce, chunk, depth, bounce_size);

	if (!ret)
		ret = gdev_mmu_check(mmu, src_va, size, GDEV_ACC_READ, fault_va);
	if (ret)
		return ret;
	for (issue = 0, s = 0; s < depth && issue < size; s++, issue += len) {
		len = size - issue < chunk ? size - issue : chunk;
		stage(&p, s, GDEV_CE_DTOH, mmu, src_va + issue, (uint8_t *)bounce + s * chunk, len,
		      issue + len < size);
	}
	for (off = 0, s = 0; off < size; off += len, s = (s + 1) % depth) {
		if (settle(&p, s))
			break;
		len = p.slot[s].size;
		slot = (uint8_t *)bounce + (uint64_t)s * chunk;
		gdev_stream_copy((uint8_t *)dst + off, slot, len);
		if (issue < size) {
			uint64_t n = size - issue < chunk ? size - issue : chunk;

			stage(&p, s, GDEV_CE_DTOH, mmu, src_va + issue, slot, n, issue + n < size);
			issue += n;
		}
	}
	return drain(&p, fault_va);
}

int gdev_ce_dtod(struct gdev_ce *ce, struct gdev_mmu *mmu_dst, uint64_t dst_va,
		 struct gdev_mmu *mmu_src, uint64_t src_va, uint64_t size, uint64_t chunk,
		 uint64_t *fault_va, int *fault_side)
{
	struct job j;
	uint64_t off, len;
	int ret;

	if (chunk < GDEV_CHUNK_MIN || chunk > GDEV_CHUNK_MAX)
		return -EINVAL;
	ret = ce_check_sides(mmu_dst, dst_va, mmu_src, src_va, size, fault_va, fault_side);
	for (off = 0; !ret && off < size; off += len) {
		len = size - off < chunk ? size - off : chunk;
		memset(&j, 0, sizeof(j));
		j.kind = GDEV_CE_DTOD;
		j.dst = mmu_dst;
		j.src = mmu_src;
		j.dst_va = dst_va + off;
		j.src_va = src_va + off;
		j.size = len;
		j.more = off + len < size;
		ce_push(ce, &j);
		ret = ce_wait_job(ce, &j);
		if (ret) {
			*fault_va = j.fault_va;
			*fault_side = j.fault_side;
		}
	}
	return ret;
}
