/*
 * copyengine.c - copy engines: one DMA thread each, a FIFO of jobs, completion signalled
 * through a condition variable (synchronous callers) and an eventfd (async submitters).
 *
 * A synchronous host<->device copy is split into chunks that flow through the caller's
 * bounce buffers (the paper's split transaction): for host to device the caller copies
 * chunk k into bounce slot k % depth while the engine drains earlier slots into device
 * memory; device to host is the mirror image.  The stage jobs live on the caller's stack
 * and the caller never returns while one of them is queued, so no chunk allocates memory.
 * Async jobs (pinned host memory, device to device) are allocated once per job, hold a
 * reference on their address spaces, and complete in submission order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "mmu_internal.h"

#define ERR_RING 4096

struct job {
	struct job *next;
	int kind;
	struct gdev_mmu *dst, *src;
	uint64_t dst_va, src_va, size;
	uint8_t *host;
	uint64_t seq; /* 0: a synchronous stage job on a caller's stack */
	int done, err;
};

struct gdev_ce {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct job *head, *tail;
	int stop, hold, efd;
	uint64_t issued, completed;
	struct { uint64_t seq; int err; } errs[ERR_RING];
};

/* device to device, page piece by page piece (memmove: same-aperture ranges may overlap) */
static int copy_d2d(struct job *j)
{
	uint64_t len, dva = j->dst_va, sva = j->src_va, left = j->size;
	uint8_t *d, *s;

	while (left) {
		d = host_of(j->dst, dva, GDEV_ACC_WRITE);
		s = host_of(j->src, sva, GDEV_ACC_READ);
		if (!d || !s)
			return -EFAULT;
		len = GDEV_PAGE_SIZE - (dva & PAGE_MASK);
		if (GDEV_PAGE_SIZE - (sva & PAGE_MASK) < len)
			len = GDEV_PAGE_SIZE - (sva & PAGE_MASK);
		len = len < left ? len : left;
		memmove(d, s, len);
		dva += len;
		sva += len;
		left -= len;
	}
	return 0;
}

static int run_job(struct job *j)
{
	struct gdev_mmu *m = j->kind == GDEV_CE_DTOH ? j->src : j->dst;
	int ret;

	pthread_rwlock_rdlock(&m->lock);
	if (j->kind == GDEV_CE_DTOD && j->src != m)
		pthread_rwlock_rdlock(&j->src->lock);
	if (j->kind == GDEV_CE_HTOD)
		ret = mmu_copy_locked(m, j->dst_va, j->host, j->size, 1);
	else if (j->kind == GDEV_CE_DTOH)
		ret = mmu_copy_locked(m, j->src_va, j->host, j->size, 0);
	else
		ret = copy_d2d(j);
	if (j->kind == GDEV_CE_DTOD && j->src != m)
		pthread_rwlock_unlock(&j->src->lock);
	pthread_rwlock_unlock(&m->lock);
	return ret;
}

/* an async job is over: record it, signal the eventfd, drop its references (mu held) */
static void retire_async(struct gdev_ce *ce, struct job *j)
{
	uint64_t one = 1;
	ssize_t w;

	ce->errs[j->seq % ERR_RING].seq = j->seq;
	ce->errs[j->seq % ERR_RING].err = j->err;
	ce->completed = j->seq;
	w = write(ce->efd, &one, sizeof(one));
	(void)w; /* EAGAIN only when the counter is saturated: still readable */
}

static void *engine_main(void *arg)
{
	struct gdev_ce *ce = arg;
	struct job *j;
	int err;

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		while (!ce->stop && (!ce->head || ce->hold))
			pthread_cond_wait(&ce->work, &ce->mu);
		if (!ce->head)
			break;
		j = ce->head;
		ce->head = j->next;
		if (!ce->head)
			ce->tail = NULL;
		pthread_mutex_unlock(&ce->mu);
		err = run_job(j);
		pthread_mutex_lock(&ce->mu);
		j->err = err;
		j->done = 1;
		if (j->seq) {
			retire_async(ce, j);
			if (j->dst)
				gdev_mmu_put(j->dst);
			if (j->src)
				gdev_mmu_put(j->src);
			free(j);
		}
		pthread_cond_broadcast(&ce->done);
	}
	pthread_mutex_unlock(&ce->mu);
	return NULL;
}

int gdev_ce_create(struct gdev_ce **out)
{
	struct gdev_ce *ce = calloc(1, sizeof(*ce));
	pthread_condattr_t attr;
	int ret = -ENOMEM;

	if (!ce)
		return -ENOMEM;
	ce->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ce->efd < 0) {
		ret = -errno;
		goto free_ce;
	}
	pthread_mutex_init(&ce->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ce->done, &attr);
	pthread_cond_init(&ce->work, NULL);
	pthread_condattr_destroy(&attr);
	ret = -pthread_create(&ce->thread, NULL, engine_main, ce);
	if (ret)
		goto destroy_sync;
	*out = ce;
	return 0;
destroy_sync:
	pthread_cond_destroy(&ce->work);
	pthread_cond_destroy(&ce->done);
	pthread_mutex_destroy(&ce->mu);
	close(ce->efd);
free_ce:
	free(ce);
	return ret;
}

void gdev_ce_destroy(struct gdev_ce *ce)
{
	pthread_mutex_lock(&ce->mu);
	ce->stop = 1;
	pthread_cond_signal(&ce->work);
	pthread_mutex_unlock(&ce->mu);
	pthread_join(ce->thread, NULL);
	pthread_cond_destroy(&ce->work);
	pthread_cond_destroy(&ce->done);
	pthread_mutex_destroy(&ce->mu);
	close(ce->efd);
	free(ce);
}

int gdev_ce_fd(struct gdev_ce *ce)
{
	return ce->efd;
}

/* append j to the FIFO (mu held) */
static void push_locked(struct gdev_ce *ce, struct job *j)
{
	j->next = NULL;
	j->done = 0;
	if (ce->tail)
		ce->tail->next = j;
	else
		ce->head = j;
	ce->tail = j;
	pthread_cond_signal(&ce->work);
}

/* queue a stage job of a synchronous copy */
static void push_stage(struct gdev_ce *ce, struct job *j, int kind, struct gdev_mmu *mmu,
		       uint64_t va, uint8_t *host, uint64_t size)
{
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	j->dst = j->src = mmu;
	j->dst_va = j->src_va = va;
	j->host = host;
	j->size = size;
	pthread_mutex_lock(&ce->mu);
	push_locked(ce, j);
	pthread_mutex_unlock(&ce->mu);
}

/* wait for a stage job; returns its result */
static int wait_stage(struct gdev_ce *ce, struct job *j)
{
	pthread_mutex_lock(&ce->mu);
	while (!j->done)
		pthread_cond_wait(&ce->done, &ce->mu);
	pthread_mutex_unlock(&ce->mu);
	return j->err;
}

/* wait for every stage job still queued; first error wins over ret */
static int drain(struct gdev_ce *ce, struct job *slots, int *busy, int depth, int ret)
{
	int s, err;

	for (s = 0; s < depth; s++) {
		if (!busy[s])
			continue;
		err = wait_stage(ce, &slots[s]);
		busy[s] = 0;
		ret = ret ? ret : err;
	}
	return ret;
}

static int check_args(uint64_t size, uint64_t chunk, int depth, uint64_t bounce_size)
{
	(void)size;
	if (chunk < GDEV_CHUNK_MIN || chunk > GDEV_CHUNK_MAX || depth < 1 ||
	    depth > GDEV_DEPTH_MAX || bounce_size < chunk * (uint64_t)depth)
		return -EINVAL;
	return 0;
}

int gdev_ce_htod(struct gdev_ce *ce, struct gdev_mmu *mmu, uint64_t dst_va, const void *src,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va)
{
	struct job slots[GDEV_DEPTH_MAX];
	int busy[GDEV_DEPTH_MAX] = { 0 };
	uint64_t off, len, k;
	uint8_t *slot;
	int s, ret = check_args(size, chunk, depth, bounce_size);

	if (!ret)
		ret = gdev_mmu_check(mmu, dst_va, size, GDEV_ACC_WRITE, fault_va);
	for (off = 0, k = 0; !ret && off < size; off += len, k++) {
		s = (int)(k % (uint64_t)depth);
		if (busy[s]) {
			busy[s] = 0;
			ret = wait_stage(ce, &slots[s]);
			if (ret)
				break;
		}
		len = size - off < chunk ? size - off : chunk;
		slot = (uint8_t *)bounce + (uint64_t)s * chunk;
		memcpy(slot, (const uint8_t *)src + off, len);
		push_stage(ce, &slots[s], GDEV_CE_HTOD, mmu, dst_va + off, slot, len);
		busy[s] = 1;
	}
	return drain(ce, slots, busy, depth, ret);
}

int gdev_ce_dtoh(struct gdev_ce *ce, struct gdev_mmu *mmu, void *dst, uint64_t src_va,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va)
{
	struct job slots[GDEV_DEPTH_MAX];
	int busy[GDEV_DEPTH_MAX] = { 0 };
	uint64_t issue = 0, off, len;
	uint8_t *slot;
	int s, ret = check_args(size, chunk, depth, bounce_size);

	if (!ret)
		ret = gdev_mmu_check(mmu, src_va, size, GDEV_ACC_READ, fault_va);
	/* prime the pipeline: the engine fills every slot */
	for (s = 0; !ret && s < depth && issue < size; s++, issue += len) {
		len = size - issue < chunk ? size - issue : chunk;
		push_stage(ce, &slots[s], GDEV_CE_DTOH, mmu, src_va + issue,
			   (uint8_t *)bounce + (uint64_t)s * chunk, len);
		busy[s] = 1;
	}
	for (off = 0, s = 0; !ret && off < size; off += len, s = (s + 1) % depth) {
		busy[s] = 0;
		ret = wait_stage(ce, &slots[s]);
		if (ret)
			break;
		len = slots[s].size;
		slot = (uint8_t *)bounce + (uint64_t)s * chunk;
		memcpy((uint8_t *)dst + off, slot, len);
		if (issue < size) {
			uint64_t n = size - issue < chunk ? size - issue : chunk;

			push_stage(ce, &slots[s], GDEV_CE_DTOH, mmu, src_va + issue, slot, n);
			busy[s] = 1;
			issue += n;
		}
	}
	return drain(ce, slots, busy, depth, ret);
}

/* validate both sides of a device-side job; *side 0 = destination, 1 = source */
static int check_sides(struct gdev_mmu *dst, uint64_t dst_va, struct gdev_mmu *src,
		       uint64_t src_va, uint64_t size, uint64_t *fault_va, int *side)
{
	int ret = 0;

	*side = 0;
	if (dst)
		ret = gdev_mmu_check(dst, dst_va, size, GDEV_ACC_WRITE, fault_va);
	if (!ret && src) {
		*side = 1;
		ret = gdev_mmu_check(src, src_va, size, GDEV_ACC_READ, fault_va);
	}
	return ret;
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
	ret = check_sides(mmu_dst, dst_va, mmu_src, src_va, size, fault_va, fault_side);
	for (off = 0; !ret && off < size; off += len) {
		len = size - off < chunk ? size - off : chunk;
		memset(&j, 0, sizeof(j));
		j.kind = GDEV_CE_DTOD;
		j.dst = mmu_dst;
		j.src = mmu_src;
		j.dst_va = dst_va + off;
		j.src_va = src_va + off;
		j.size = len;
		pthread_mutex_lock(&ce->mu);
		push_locked(ce, &j);
		pthread_mutex_unlock(&ce->mu);
		ret = wait_stage(ce, &j);
	}
	return ret;
}

int gdev_ce_submit(struct gdev_ce *ce, int kind, struct gdev_mmu *mmu_dst, uint64_t dst_va,
		   struct gdev_mmu *mmu_src, uint64_t src_va, void *host, uint64_t size,
		   uint64_t *seq, uint64_t *fault_va, int *fault_side)
{
	struct job *j;
	int ret;

	if (kind < GDEV_CE_HTOD || kind > GDEV_CE_DTOD || (kind != GDEV_CE_DTOH && !mmu_dst) ||
	    (kind != GDEV_CE_HTOD && !mmu_src) || (kind != GDEV_CE_DTOD && !host && size))
		return -EINVAL;
	if (kind == GDEV_CE_HTOD)
		mmu_src = NULL;
	if (kind == GDEV_CE_DTOH)
		mmu_dst = NULL;
	ret = check_sides(mmu_dst, dst_va, mmu_src, src_va, size, fault_va, fault_side);
	if (ret)
		return ret;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct job){ .kind = kind, .dst = mmu_dst, .src = mmu_src, .dst_va = dst_va,
			   .src_va = src_va, .size = size, .host = host };
	if (mmu_dst)
		gdev_mmu_get(mmu_dst);
	if (mmu_src)
		gdev_mmu_get(mmu_src);
	pthread_mutex_lock(&ce->mu);
	j->seq = *seq = ++ce->issued;
	push_locked(ce, j);
	pthread_mutex_unlock(&ce->mu);
	return 0;
}

uint64_t gdev_ce_completed(struct gdev_ce *ce)
{
	uint64_t c;

	pthread_mutex_lock(&ce->mu);
	c = ce->completed;
	pthread_mutex_unlock(&ce->mu);
	return c;
}

/* the recorded result of a completed seq (mu held) */
static int result_locked(struct gdev_ce *ce, uint64_t seq)
{
	if (ce->errs[seq % ERR_RING].seq != seq)
		return -ENOENT;
	return ce->errs[seq % ERR_RING].err;
}

int gdev_ce_wait(struct gdev_ce *ce, uint64_t seq, int64_t timeout_ns, int *job_err)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	if (timeout_ns > 0) {
		until.tv_sec += timeout_ns / 1000000000;
		until.tv_nsec += timeout_ns % 1000000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&ce->mu);
	if (!seq || seq > ce->issued) {
		ret = -EINVAL;
		goto unlock;
	}
	while (ce->completed < seq && !ret) {
		if (timeout_ns < 0)
			pthread_cond_wait(&ce->done, &ce->mu);
		else
			ret = -pthread_cond_timedwait(&ce->done, &ce->mu, &until);
	}
	if (ce->completed >= seq) {
		ret = 0;
		*job_err = result_locked(ce, seq);
	}
unlock:
	pthread_mutex_unlock(&ce->mu);
	return ret;
}

int gdev_ce_error(struct gdev_ce *ce, uint64_t seq)
{
	int ret;

	pthread_mutex_lock(&ce->mu);
	if (!seq || seq > ce->issued)
		ret = -EINVAL;
	else if (ce->completed < seq)
		ret = -EAGAIN;
	else
		ret = result_locked(ce, seq);
	pthread_mutex_unlock(&ce->mu);
	return ret;
}

void gdev_ce_hold(struct gdev_ce *ce, int hold)
{
	pthread_mutex_lock(&ce->mu);
	ce->hold = hold;
	pthread_cond_signal(&ce->work);
	pthread_mutex_unlock(&ce->mu);
}
