/* ce_completion.c - completion of async copy-engine jobs: in-order sequence numbers,
 * a timed wait on the engine's condition variable, and per-job results kept in a ring. */
#include <errno.h>
#include <time.h>

#include "ce_internal.h"

uint64_t gdev_ce_completed(struct gdev_ce *ce)
{
	uint64_t c;

	pthread_mutex_lock(&ce->mu);
	c = ce->completed;
	pthread_mutex_unlock(&ce->mu);
	return c;
}

/* the recorded result of a completed seq; -ENOENT once the ring forgot it (mu held) */
static int result_locked(struct gdev_ce *ce, uint64_t seq)
{
	if (ce->errs[seq % ERR_RING].seq != seq)
		return -ENOENT;
	return ce->errs[seq % ERR_RING].err;
}

/* now + ns on CLOCK_MONOTONIC (the done condition's clock) */
static struct timespec deadline(int64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ns / 1000000000;
	t.tv_nsec += ns % 1000000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

int gdev_ce_wait(struct gdev_ce *ce, uint64_t seq, int64_t timeout_ns, int *job_err)
{
	struct timespec until = deadline(timeout_ns > 0 ? timeout_ns : 0);
	int ret = 0;

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

uint64_t gdev_ce_queued(struct gdev_ce *ce)
{
	uint64_t n;

	pthread_mutex_lock(&ce->mu);
	n = ce->queued;
	pthread_mutex_unlock(&ce->mu);
	return n;
}

void gdev_ce_stats(struct gdev_ce *ce, uint64_t *jobs, uint64_t *bytes, uint64_t *busy_ns)
{
	pthread_mutex_lock(&ce->mu);
	*jobs = ce->jobs;
	*bytes = ce->bytes;
	*busy_ns = ce->busy_ns;
	pthread_mutex_unlock(&ce->mu);
}
