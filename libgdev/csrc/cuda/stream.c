/* Streams and events.  Every CUstream is a stream of the context's Gdev handle (an in-order
 * channel; the NULL stream is the handle's legacy stream 0), so work of different streams
 * runs side by side and cuStreamWaitEvent orders a stream in the daemon (docs/cuda.md).  A
 * stream remembers the fence of its newest asynchronous op, which an event captures.  A
 * timed event launches a one-thread marker kernel that stores the device's %globaltimer
 * into the event's slot: the time the stream reached it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define SLOTS_PER_PAGE 512

static const char marker_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry gdev_event_record(\n    .param .u64 slot\n)\n{\n"
    "    .reg .b64 %rd<4>;\n\n    ld.param.u64 %rd1, [slot];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    mov.u64 %rd3, %globaltimer;\n"
    "    st.global.u64 [%rd2], %rd3;\n    ret;\n}\n";

/* Wait for fence id; a kernel's illegal access poisons the context (sticky). */
static CUresult wait_fence(CUcontext c, uint32_t id, int poll)
{
    struct gdev_time zero = {0, 0, 0};
    int err;
    if (c->sticky)
        return c->sticky;
    err = gsync(c->h, id, poll ? &zero : NULL);
    if (poll && err == -ETIME)
        return CUDA_ERROR_NOT_READY;
    CUresult r = cu_poison(c, cu_error(err));
    return r;
}

API CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
    CUcontext c = NULL;
    CUresult r = cu_live(&c);
    uint32_t sid = 0;
    int err;
    if (r)
        return r;
    if (!ph || flags & ~CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    *ph = calloc(1, sizeof **ph);
    if (!*ph)
        return CUDA_ERROR_OUT_OF_MEMORY;
    err = gstream_create(c->h, flags & CU_STREAM_NON_BLOCKING ? GDEV_STREAM_NON_BLOCKING : 0,
                         &sid);
    if (err) {
        free(*ph);
        *ph = NULL;
        return cu_poison(c, cu_fail(cu_error(err), "cuStreamCreate: %s", gdev_last_error()));
    }
    (*ph)->ctx = c;
    (*ph)->sid = sid;
    (*ph)->flags = flags;
    (*ph)->id = cu_next_id();
    return CUDA_SUCCESS;
}

/* Streams of a context share its one handle, and so its one priority: the range is 0..0
 * (cuCtxGetStreamPriorityRange) and any priority is clamped to 0, as CUDA clamps. */
API CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
    (void)priority;
    return cuStreamCreate(ph, flags);
}

API CUresult cuStreamDestroy(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s->ctx->destroyed)  /* a destroyed context took its streams with its handle */
        gstream_destroy(s->ctx->h, s->sid);
    cu_stream_attrs_forget(s);
    free(s);
    return CUDA_SUCCESS;
}

static CUresult stream_wait(CUstream s, int poll)
{
    struct gdev_time zero = {0, 0, 0};
    CUcontext c = NULL;
    CUresult r = cu_stream_owner(s, &c);
    int err;
    if (r)
        return r;
    if (c->sticky)
        return c->sticky;
    err = gstream_sync(c->h, cu_stream_id(s), poll ? &zero : NULL);
    if (poll && err == -ETIME)
        return CUDA_ERROR_NOT_READY;
    r = cu_poison(c, cu_error(err));
    if (!poll)
        cu_printf_flush(c);
    return r;
}

API CUresult cuStreamSynchronize(CUstream s)
{
    return stream_wait(s, 0);
}

API CUresult cuStreamQuery(CUstream s)
{
    return stream_wait(s, 1);
}

API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    CUcontext c = NULL;
    CUresult r = cu_stream_owner(s, &c);
    (void)flags;
    if (r || (r = c->sticky))
        return r;
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->ipc)
        return cu_ipc_stream_wait(c, s, e);
    if (!e->recorded || !e->fence)
        return CUDA_SUCCESS;
    if (e->ctx != c) /* another context (another handle): wait on the host */
        return wait_fence(e->ctx, e->fence, 0);
    return cu_error(gstream_wait(c->h, cu_stream_id(s), e->fence));
}

API CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
    LIVE(c);
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    *ph = calloc(1, sizeof **ph);
    if (!*ph)
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*ph)->ctx = c;
    (*ph)->flags = flags;
    CUresult r = flags & CU_EVENT_INTERPROCESS ? cu_ipc_event_create(*ph) : CUDA_SUCCESS;
    if (r) {
        free(*ph);
        *ph = NULL;
    }
    return r;
}

API CUresult cuEventDestroy(CUevent e)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->ipc)
        cu_ipc_event_destroy(e);
    free(e); /* its slot stays with the context's page until the context goes */
    return CUDA_SUCCESS;
}

/* A timestamp slot of the context, loading the marker module on first use. */
static CUresult get_slot(CUcontext c, uint64_t *slot)
{
    CUresult r = CUDA_SUCCESS;
    if (!c->marker)
        r = cu_load_ptx(c, marker_ptx, strlen(marker_ptx), &c->marker);
    if (!r && (!c->slots || c->slots_used == SLOTS_PER_PAGE)) {
        c->slots = gmalloc(c->h, SLOTS_PER_PAGE * 8);
        c->slots_used = 0;
        if (!c->slots)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!r)
        *slot = c->slots + 8u * c->slots_used++;
    return r;
}

/* Launch the marker that stamps e's slot into s, in c (made current for the launch). */
static CUresult stamp(CUcontext c, CUevent e, CUstream s)
{
    CUcontext cur = NULL;
    CUresult r = CUDA_SUCCESS;
    if (!e->slot && (r = get_slot(c, &e->slot)))
        return r;
    void *params[] = {&e->slot};
    int switched = cu_current(&cur) || cur != c;
    if (switched && (r = cuCtxPushCurrent(c)))
        return r;
    r = cuLaunchKernel(&c->marker->funcs[0], 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
    if (switched)
        cuCtxPopCurrent(NULL);
    return r;
}

/* In the stream's context (CUDA: event and stream of one device, whichever is current). */
API CUresult cuEventRecord(CUevent e, CUstream s)
{
    CUcontext c = NULL;
    CUresult r = cu_stream_owner(s, &c);
    if (r || (r = c->sticky))
        return r;
    if (!e || e->ctx != c)
        return cu_fail(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord: %s",
                       e ? "the event and the stream belong to different contexts"
                         : "no event");
    if (e->ipc)
        return cu_ipc_event_record(c, e, s);
    if (!(e->flags & CU_EVENT_DISABLE_TIMING) && (r = stamp(c, e, s)))
        return r;
    e->fence = *cu_stream_fence(c, s);
    e->recorded = 1;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
    (void)flags;
    return cuEventRecord(e, s);
}

API CUresult cuEventQuery(CUevent e)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->ipc)
        return cu_ipc_event_wait(e, 1);
    return e->recorded ? wait_fence(e->ctx, e->fence, 1) : CUDA_SUCCESS;
}

API CUresult cuEventSynchronize(CUevent e)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->ipc)
        return cu_ipc_event_wait(e, 0);
    CUresult r = e->recorded ? wait_fence(e->ctx, e->fence, 0) : CUDA_SUCCESS;
    if (e->recorded)
        cu_printf_flush(e->ctx);
    return r;
}

API CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    uint64_t t0, t1;
    CUresult r;
    if (!ms || !start || !end)
        return CUDA_ERROR_INVALID_VALUE;
    if (!start->recorded || !end->recorded || !start->slot || !end->slot)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = cuEventSynchronize(end)) || (r = cuEventSynchronize(start)))
        return r;
    if (gmemcpy_from_device(start->ctx->h, &t0, start->slot, 8)
        || gmemcpy_from_device(end->ctx->h, &t1, end->slot, 8))
        return cu_fail(CUDA_ERROR_UNKNOWN, "reading event times: %s", gdev_last_error());
    *ms = (float)((double)(int64_t)(t1 - t0) / 1e6);
    return CUDA_SUCCESS;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuStreamWaitEvent) PTSZ(cuStreamQuery) PTSZ(cuStreamSynchronize) PTSZ(cuEventRecord)
PTSZ(cuEventRecordWithFlags)
