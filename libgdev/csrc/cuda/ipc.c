/* CUDA IPC: cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle and interprocess
 * events (cuIpcGetEventHandle / cuIpcOpenEventHandle), over libgdev's gipc_* verbs.
 *
 * A handle is the daemon's 64 bytes (libgdev/ipchandle.py: magic, record id, exporting pid,
 * size, 128-bit secret); the daemon alone decides what it opens.  This file adds CUDA's
 * rules for processes, which the daemon (one context per vGPU handle) does not know: a
 * handle cannot be opened in the process that exported it (CUDA_ERROR_INVALID_CONTEXT), and
 * only one context of a process may hold a memory handle open (CUDA_ERROR_ALREADY_MAPPED);
 * the same context opening it again gets the same pointer, reference counted (the daemon
 * counts too).  An opened range is tracked like an allocation, for cuMemGetAddressRange and
 * the pointer queries, until its last close.
 *
 * An interprocess event (cuEventCreate with CU_EVENT_INTERPROCESS, which CUDA requires with
 * CU_EVENT_DISABLE_TIMING) lives in the daemon: a record captures the stream's unfinished
 * work there, a query or synchronize waits for it there, and cuStreamWaitEvent orders the
 * stream in the daemon, so every process holding the event sees every holder's last record.
 * stream.c hands such events (e->ipc set) to the cu_ipc_event_* functions below. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

static const char mem_magic[8] = "GDEVIPCM", event_magic[8] = "GDEVIPCE";

struct cu_ipc_event {
    uint32_t id;                              /* the event's id in its context's handle */
    unsigned char handle[CU_IPC_HANDLE_SIZE]; /* what cuIpcGetEventHandle returns */
};

/* One opened memory handle of this process (record id and secret name it). */
struct opened {
    unsigned char key[8 + 4 + 4 + 8 + 16]; /* magic, id, pid, size, secret */
    CUcontext ctx;
    CUdeviceptr addr;
    unsigned refs;
    struct opened *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct opened *opens; /* invariant: refs >= 1; one per key */

/* A handle's fields: 0 if it is no gdev handle of this kind (CUDA_ERROR_INVALID_VALUE). */
static int parse(const char *bytes, const char magic[8], uint32_t *pid)
{
    static const char zero[24];
    if (memcmp(bytes, magic, 8) || memcmp(bytes + 40, zero, sizeof zero))
        return 0;
    memcpy(pid, bytes + 12, 4); /* little-endian, as the daemon writes it */
    return 1;
}

/* The checks common to both opens: a gdev handle of this kind, from another process. */
static CUresult check_foreign(const char *who, const char *bytes, const char magic[8])
{
    uint32_t pid;
    if (!parse(bytes, magic, &pid))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: not a gdev IPC handle", who);
    if (pid == (uint32_t)getpid())
        return cu_fail(CUDA_ERROR_INVALID_CONTEXT, "%s: a handle cannot be opened in the "
                       "process that exported it", who);
    return CUDA_SUCCESS;
}

/* The daemon's refusal of an open as CUDA reports it: a handle naming nothing live is an
 * invalid handle; the rest as every call translates it. */
static CUresult open_error(const char *who, int err)
{
    CUresult r = err == -ENOENT ? CUDA_ERROR_INVALID_HANDLE : cu_error(err);
    return cu_fail(r, "%s: %s", who, gdev_last_error());
}

API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    LIVE(c); /* a faulted context exports and opens nothing (its sticky error) */
    struct alloc a;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_alloc_find(c, dptr, &a) || a.managed)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuIpcGetMemHandle: 0x%llx is not device "
                       "memory of cuMemAlloc", (unsigned long long)dptr);
    int err = gipc_export(c->h, dptr, (uint8_t *)pHandle->reserved);
    if (err)
        return cu_fail(cu_poison(c, cu_error(err)), "cuIpcGetMemHandle: %s", gdev_last_error());
    return CUDA_SUCCESS;
}

static struct opened *find_open(const unsigned char *key)
{
    for (struct opened *o = opens; o; o = o->next)
        if (!memcmp(o->key, key, sizeof o->key))
            return o;
    return NULL;
}

/* Map the handle in ctx (the daemon reopens an open handle at the same address). */
static CUresult open_mem(CUcontext c, const CUipcMemHandle *h, CUdeviceptr *pdptr)
{
    struct opened *o = find_open((const unsigned char *)h->reserved);
    uint64_t addr, size;
    if (o && o->ctx != c)
        return cu_fail(CUDA_ERROR_ALREADY_MAPPED, "cuIpcOpenMemHandle: another context of "
                       "this process holds this handle open");
    int err = gipc_open(c->h, (const uint8_t *)h->reserved, &addr, &size);
    if (err)
        return open_error("cuIpcOpenMemHandle", err);
    if (!o) {
        if (!(o = calloc(1, sizeof *o))) {
            gipc_close(c->h, addr);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(o->key, h->reserved, sizeof o->key);
        o->ctx = c;
        o->addr = addr;
        o->next = opens;
        opens = o;
        cu_track_alloc(c, addr, size, 0);
    }
    o->refs++;
    *pdptr = addr;
    return CUDA_SUCCESS;
}

CUresult cu_ipc_open(CUcontext c, const CUipcMemHandle *h, CUdeviceptr *pdptr, const char *who)
{
    CUresult r = check_foreign(who, h->reserved, mem_magic);
    if (r)
        return r;
    pthread_mutex_lock(&lock);
    r = open_mem(c, h, pdptr);
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    LIVE(c);
    if (!pdptr || Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_ipc_open(c, &handle, pdptr, "cuIpcOpenMemHandle");
}

CUresult cu_ipc_close(CUcontext c, CUdeviceptr dptr, const char *who)
{
    struct opened **p, *o = NULL;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (p = &opens; *p; p = &(*p)->next)
        if ((*p)->ctx == c && (*p)->addr == dptr) {
            o = *p;
            break;
        }
    if (!o)
        r = cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: 0x%llx was not opened by "
                    "cuIpcOpenMemHandle in this context", who, (unsigned long long)dptr);
    else if (gipc_close(c->h, dptr))
        r = cu_fail(cu_error(-gdev_last_errno()), "%s: %s", who, gdev_last_error());
    else if (!--o->refs) {
        *p = o->next;
        cu_untrack_alloc(c, dptr);
        free(o);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CURRENT(c);
    return cu_ipc_close(c, dptr, "cuIpcCloseMemHandle");
}

/* Forget the opens of a destroyed context (its handle took the mappings with it). */
void cu_ipc_forget(CUcontext c)
{
    pthread_mutex_lock(&lock);
    for (struct opened **p = &opens; *p;) {
        struct opened *o = *p;
        if (o->ctx == c) {
            *p = o->next;
            free(o);
        } else {
            p = &o->next;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* events ---------------------------------------------------------------------------------- */

CUresult cu_ipc_event_create(CUevent e)
{
    if (!(e->flags & CU_EVENT_DISABLE_TIMING))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: CU_EVENT_INTERPROCESS needs "
                       "CU_EVENT_DISABLE_TIMING");
    if (!(e->ipc = calloc(1, sizeof *e->ipc)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    int err = gipc_event_new(e->ctx->h, e->ipc->handle);
    if (err) {
        free(e->ipc);
        e->ipc = NULL;
        return cu_fail(cu_error(err), "cuEventCreate: %s", gdev_last_error());
    }
    memcpy(&e->ipc->id, e->ipc->handle + 8, 4);
    return CUDA_SUCCESS;
}

void cu_ipc_event_destroy(CUevent e)
{
    if (!e->ctx->destroyed) /* a destroyed context's handle dropped its events */
        gipc_event_close(e->ctx->h, e->ipc->id);
    free(e->ipc);
    e->ipc = NULL;
}

CUresult cu_ipc_event_record(CUcontext c, CUevent e, CUstream s)
{
    if (c->sticky)
        return c->sticky;
    int err = gipc_event_record(c->h, e->ipc->id, cu_stream_id(s));
    if (err)
        return cu_fail(cu_poison(c, cu_error(err)), "cuEventRecord: %s", gdev_last_error());
    e->recorded = 1;
    return CUDA_SUCCESS;
}

CUresult cu_ipc_event_wait(CUevent e, int poll)
{
    struct gdev_time zero = {0, 0, 0};
    CUcontext c = e->ctx;
    if (c->sticky)
        return c->sticky;
    int err = gipc_event_sync(c->h, e->ipc->id, poll ? &zero : NULL);
    if (poll && err == -ETIME)
        return CUDA_ERROR_NOT_READY;
    if (!poll)
        cu_printf_flush(c);
    return cu_poison(c, cu_error(err));
}

CUresult cu_ipc_stream_wait(CUcontext c, CUstream s, CUevent e)
{
    if (e->ctx != c) /* another context of this process: wait on the host */
        return cu_ipc_event_wait(e, 0);
    return cu_error(gipc_event_wait(c->h, cu_stream_id(s), e->ipc->id));
}

API CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    if (!pHandle || !event)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event->ipc)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuIpcGetEventHandle: the event was not "
                       "created with CU_EVENT_INTERPROCESS");
    memcpy(pHandle->reserved, event->ipc->handle, CU_IPC_HANDLE_SIZE);
    return CUDA_SUCCESS;
}

API CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    LIVE(c);
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_foreign("cuIpcOpenEventHandle", handle.reserved, event_magic);
    if (r)
        return r;
    CUevent e = calloc(1, sizeof *e);
    if (!e || !(e->ipc = calloc(1, sizeof *e->ipc))) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    int err = gipc_event_open(c->h, (const uint8_t *)handle.reserved, &e->ipc->id);
    if (err) {
        free(e->ipc);
        free(e);
        return open_error("cuIpcOpenEventHandle", err);
    }
    memcpy(e->ipc->handle, handle.reserved, CU_IPC_HANDLE_SIZE);
    e->ctx = c;
    e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    *phEvent = e;
    return CUDA_SUCCESS;
}
