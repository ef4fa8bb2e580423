/*
 * ce_internal.h - a copy engine's job queue, shared by copyengine.c (the engine thread,
 * async jobs) and ce_pipeline.c (the synchronous, pipelined copies).
 *
 * Jobs run in FIFO order on the engine thread.  A job is either a stage of a synchronous
 * copy (seq 0: it lives on the caller's stack and the caller waits for it before
 * returning) or an async job (seq > 0: malloc'd, holding references on its address
 * spaces, freed by the engine once retired).
 */
#ifndef GDEV_CE_INTERNAL_H
#define GDEV_CE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "mmu_internal.h"

#define ERR_RING 4096

struct job {
	struct job *next;
	int kind;
	struct gdev_mmu *dst, *src;
	uint64_t dst_va, src_va, size;
	uint8_t *host;
	uint64_t seq;
	int done, err;
	int more;	  /* a stage of a synchronous copy with more stages to come */
	int fault_side;	  /* on error: 0 the destination, 1 the source */
	uint64_t fault_va; /* on error: the first address that failed */
};

struct gdev_ce {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct job *head, *tail;
	int stop, hold, efd;
	uint64_t issued, completed;
	uint64_t queued; /* jobs queued or running */
	uint64_t jobs, bytes, busy_ns; /* statistics: jobs run, bytes moved, time busy */
	struct {
		uint64_t seq;
		int err;
	} errs[ERR_RING];
};

/* append j to the FIFO and wake the engine (takes the engine's mutex) */
void ce_push(struct gdev_ce *ce, struct job *j);
/* wait until j ran; returns its result */
int ce_wait_job(struct gdev_ce *ce, struct job *j);
/* validate both sides of a device-side copy; *side 0 = destination, 1 = source */
int ce_check_sides(struct gdev_mmu *dst, uint64_t dst_va, struct gdev_mmu *src,
		   uint64_t src_va, uint64_t size, uint64_t *fault_va, int *side);

#endif
