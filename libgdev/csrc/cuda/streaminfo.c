/* What a stream says of itself (cuStreamGetFlags/Priority/Ctx/Id/Device) and its attributes
 * (cuStreamGet/SetAttribute, cuStreamCopyAttributes).  The attributes a stream takes are
 * hints the emulated device has no hardware for: an L2 access-policy window (its size
 * bounded by CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0 here, so only an empty
 * window fits, as on a GPU without persisting L2), the synchronization policy and the
 * memory-synchronization domains; they are validated, kept per stream and reported back.
 * A stream's priority is fixed at creation (CUDA_ERROR_NOT_SUPPORTED to change it).  The
 * NULL stream, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are the context's legacy stream. */
#include <string.h>

#include "cuda_internal.h"

#define MAX_ATTR_STREAMS 256

API CUresult cuStreamGetFlags(CUstream s, unsigned int *flags)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !flags)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *flags = cu_stream_is_legacy(s) ? CU_STREAM_DEFAULT : s->flags;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetPriority(CUstream s, int *priority)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !priority)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *priority = cu_stream_is_legacy(s) ? 0 : s->priority;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !pctx)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *pctx = c;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *pctx, CUgreenCtx *pgreen)
{
    if (!pgreen)
        return CUDA_ERROR_INVALID_VALUE;
    *pgreen = NULL; /* no green contexts */
    return cuStreamGetCtx(s, pctx);
}

/* Ids are unique in the process; the legacy stream is 0, the per-thread stream 1. */
API CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !id)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *id = s == CU_STREAM_PER_THREAD ? 1 : cu_stream_is_legacy(s) ? 0 : s->id + 1;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetDevice(CUstream s, CUdevice *dev)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !dev)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *dev = c->dev;
    return CUDA_SUCCESS;
}

/* ---- attributes ----------------------------------------------------------------------- */

static struct stream_attrs {
    CUstream stream;
    CUcontext ctx; /* which context's legacy stream, for the NULL stream */
    int used;
    CUaccessPolicyWindow window;
    CUsynchronizationPolicy sync;
    CUlaunchMemSyncDomainMap domain_map;
    CUlaunchMemSyncDomain domain;
} table[MAX_ATTR_STREAMS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const struct stream_attrs plain = {.sync = CU_SYNC_POLICY_AUTO,
                                          .domain_map = {.default_ = 0, .remote = 1}};

/* s's entry, made on first use if `make` (NULL if the table is full or s has none). */
static struct stream_attrs *entry(CUstream s, CUcontext c, int make)
{
    struct stream_attrs *free_slot = NULL;
    for (int i = 0; i < MAX_ATTR_STREAMS; i++) {
        if (table[i].used && table[i].stream == s && table[i].ctx == c)
            return &table[i];
        if (!table[i].used && !free_slot)
            free_slot = &table[i];
    }
    if (!make || !free_slot)
        return NULL;
    *free_slot = plain;
    free_slot->stream = s, free_slot->ctx = c, free_slot->used = 1;
    return free_slot;
}

void cu_stream_attrs_forget(CUstream s)
{
    pthread_mutex_lock(&lock);
    struct stream_attrs *a = entry(s, s->ctx, 0);
    if (a)
        a->used = 0;
    pthread_mutex_unlock(&lock);
}

static CUresult check(CUstreamAttrID id, const CUstreamAttrValue *v)
{
    switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
        const CUaccessPolicyWindow *w = &v->accessPolicyWindow;
        return w->num_bytes || !(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f) ||
                       w->hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
                       (w->missProp != CU_ACCESS_PROPERTY_NORMAL &&
                        w->missProp != CU_ACCESS_PROPERTY_STREAMING)
                   ? cu_fail(CUDA_ERROR_INVALID_VALUE, "access policy window: the device has "
                             "no persisting L2 (maximum window 0 bytes)")
                   : CUDA_SUCCESS;
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        return v->syncPolicy < CU_SYNC_POLICY_AUTO || v->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC
                   ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        return v->memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE ? CUDA_ERROR_INVALID_VALUE
                                                                   : CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "a stream's priority is fixed at creation");
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

API CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID id, const CUstreamAttrValue *v)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !v)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    if ((r = check(id, v)))
        return r;
    pthread_mutex_lock(&lock);
    struct stream_attrs *a = entry(cu_stream_is_legacy(s) ? NULL : s, c, 1);
    if (a && id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW) a->window = v->accessPolicyWindow;
    if (a && id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY) a->sync = v->syncPolicy;
    if (a && id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP) a->domain_map = v->memSyncDomainMap;
    if (a && id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN) a->domain = v->memSyncDomain;
    pthread_mutex_unlock(&lock);
    return a ? CUDA_SUCCESS : cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "more than %d streams with "
                                      "attributes", MAX_ATTR_STREAMS);
}

API CUresult cuStreamGetAttribute(CUstream s, CUstreamAttrID id, CUstreamAttrValue *v)
{
    CUcontext c;
    CUresult r = cu_stream_owner(s, &c);
    if (r || !v)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    memset(v, 0, sizeof *v);
    if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
        return cuStreamGetPriority(s, &v->priority);
    pthread_mutex_lock(&lock);
    const struct stream_attrs *found = entry(cu_stream_is_legacy(s) ? NULL : s, c, 0), *a;
    a = found ? found : &plain;
    switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: v->accessPolicyWindow = a->window; break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: v->syncPolicy = a->sync; break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: v->memSyncDomainMap = a->domain_map; break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: v->memSyncDomain = a->domain; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuStreamCopyAttributes(CUstream dst, CUstream src)
{
    CUcontext cd, cs;
    CUresult r = cu_stream_owner(dst, &cd);
    if (r || (r = cu_stream_owner(src, &cs)))
        return r;
    pthread_mutex_lock(&lock);
    struct stream_attrs *from = entry(cu_stream_is_legacy(src) ? NULL : src, cs, 0);
    struct stream_attrs *to = entry(cu_stream_is_legacy(dst) ? NULL : dst, cd, 1);
    if (to) {
        struct stream_attrs keep = *to;
        *to = from ? *from : plain;
        to->stream = keep.stream, to->ctx = keep.ctx, to->used = 1;
    }
    pthread_mutex_unlock(&lock);
    return to ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuStreamGetPriority) PTSZ(cuStreamGetId) PTSZ(cuStreamGetFlags) PTSZ(cuStreamGetDevice)
PTSZ(cuStreamGetCtx) PTSZ(cuStreamGetCtx_v2) PTSZ(cuStreamCopyAttributes)
PTSZ(cuStreamGetAttribute) PTSZ(cuStreamSetAttribute)
