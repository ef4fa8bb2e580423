/* Stream attributes (cudaStreamSet/Get/CopyAttributes), the persisting-L2 reset, and the
 * thread's capture mode.  The attributes a stream takes are hints the emulated device has no
 * hardware for: an L2 access-policy window (its size bounded by
 * cudaDevAttrMaxAccessPolicyWindowSize, 0 here, so only an empty window fits, as on a GPU
 * without persisting L2), the synchronization policy and memory-synchronization domains;
 * they are validated, kept per stream and reported back.  A stream's priority is fixed at
 * creation here (cudaErrorNotSupported to change it). */
#include <string.h>

#include "cudart_internal.h"

#define MAX_ATTR_STREAMS 256

static struct stream_attrs {
    cudaStream_t stream; /* NULL: free (the NULL stream is slot 0's own key below) */
    int used;
    struct cudaAccessPolicyWindow window;
    enum cudaSynchronizationPolicy sync;
    cudaLaunchMemSyncDomainMap domain_map;
    cudaLaunchMemSyncDomain domain;
} table[MAX_ATTR_STREAMS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* s's entry, made on first use if `make` (NULL if the table is full or s has none). */
static struct stream_attrs *entry(cudaStream_t s, int make)
{
    struct stream_attrs *free_slot = NULL;
    for (int i = 0; i < MAX_ATTR_STREAMS; i++) {
        if (table[i].used && table[i].stream == s)
            return &table[i];
        if (!table[i].used && !free_slot)
            free_slot = &table[i];
    }
    if (!make || !free_slot)
        return NULL;
    *free_slot = (struct stream_attrs){.stream = s, .used = 1,
                                       .sync = cudaSyncPolicyAuto,
                                       .domain_map = {.default_ = 0, .remote = 1}};
    return free_slot;
}

void rt_stream_attrs_forget(cudaStream_t s)
{
    pthread_mutex_lock(&lock);
    struct stream_attrs *a = entry(s, 0);
    if (a)
        a->used = 0;
    pthread_mutex_unlock(&lock);
}

static cudaError_t check_window(const struct cudaAccessPolicyWindow *w)
{
    int max = 0;
    cudaError_t e = cudaDeviceGetAttribute(&max, cudaDevAttrMaxAccessPolicyWindowSize,
                                           rt_device());
    if (e)
        return e;
    if (w->num_bytes > (size_t)max || !(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f)
        || w->hitProp < cudaAccessPropertyNormal || w->hitProp > cudaAccessPropertyPersisting
        || (w->missProp != cudaAccessPropertyNormal && w->missProp != cudaAccessPropertyStreaming))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

static cudaError_t set_attr(struct stream_attrs *a, cudaStreamAttrID id,
                            const cudaStreamAttrValue *v)
{
    switch (id) {
    case cudaLaunchAttributeAccessPolicyWindow: a->window = v->accessPolicyWindow; break;
    case cudaLaunchAttributeSynchronizationPolicy: a->sync = v->syncPolicy; break;
    case cudaLaunchAttributeMemSyncDomainMap: a->domain_map = v->memSyncDomainMap; break;
    case cudaLaunchAttributeMemSyncDomain: a->domain = v->memSyncDomain; break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

API cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID id,
                                       const cudaStreamAttrValue *v)
{
    cudaError_t e = cudaSuccess;
    if (!v)
        return rt_set(cudaErrorInvalidValue);
    if (id == cudaLaunchAttributePriority)
        return rt_set(cudaErrorNotSupported);
    if (id == cudaLaunchAttributeAccessPolicyWindow && (e = check_window(&v->accessPolicyWindow)))
        return rt_set(e);
    if (id == cudaLaunchAttributeSynchronizationPolicy
        && (v->syncPolicy < cudaSyncPolicyAuto || v->syncPolicy > cudaSyncPolicyBlockingSync))
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    struct stream_attrs *a = entry(s, 1);
    e = a ? set_attr(a, id, v) : cudaErrorMemoryAllocation;
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

API cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaStreamAttrID id,
                                       cudaStreamAttrValue *v)
{
    if (!v)
        return rt_set(cudaErrorInvalidValue);
    if (id == cudaLaunchAttributePriority)
        return cudaStreamGetPriority(s, &v->priority);
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    struct stream_attrs *a = entry(s, 0), plain = {.sync = cudaSyncPolicyAuto,
                                                  .domain_map = {.default_ = 0, .remote = 1}};
    a = a ? a : &plain;
    memset(v, 0, sizeof *v);
    switch (id) {
    case cudaLaunchAttributeAccessPolicyWindow: v->accessPolicyWindow = a->window; break;
    case cudaLaunchAttributeSynchronizationPolicy: v->syncPolicy = a->sync; break;
    case cudaLaunchAttributeMemSyncDomainMap: v->memSyncDomainMap = a->domain_map; break;
    case cudaLaunchAttributeMemSyncDomain: v->memSyncDomain = a->domain; break;
    default: e = cudaErrorInvalidValue;
    }
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

API cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    struct stream_attrs *from = entry(src, 0), *to = entry(dst, 1);
    if (!to)
        e = cudaErrorMemoryAllocation;
    else if (from)
        *to = (struct stream_attrs){.stream = dst, .used = 1, .window = from->window,
                                    .sync = from->sync, .domain_map = from->domain_map,
                                    .domain = from->domain};
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

/* There are no persisting L2 lines to reset (cudaDevAttrMaxPersistingL2CacheSize is 0). */
API cudaError_t cudaCtxResetPersistingL2Cache(void)
{
    CUcontext ctx;
    return rt_ctx(&ctx);
}

static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* The thread's mode is kept and exchanged; capture does not police unsafe calls by mode. */
API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || *mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed)
        return rt_set(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}
