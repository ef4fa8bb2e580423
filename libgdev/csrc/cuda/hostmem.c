/* Host memory the driver knows: pinned buffers (cuMemHostAlloc, the daemon's gmalloc_dma,
 * mapped for kernels) and registered ranges (cuMemHostRegister).  Registering page-locks
 * nothing here: every copy from pageable memory streams through the context's staging
 * buffers either way, so a registered range behaves as CUDA promises for copies.  A kernel
 * cannot reach it (the daemon maps only memory it created), so a registered range has no
 * device pointer: cuMemHostGetDevicePointer on it is CUDA_ERROR_NOT_SUPPORTED with that
 * reason, and CU_MEMHOSTREGISTER_IOMEMORY (device registers, not RAM) is refused.
 * Registration is process-wide, as with CU_MEMHOSTREGISTER_PORTABLE. */
#include <stdlib.h>

#include "cuda_internal.h"

#define REGISTERED 0x80000000u /* flags bit: a registered range, not a pinned buffer */

struct host_range {
    CUcontext ctx;
    uintptr_t base;
    size_t size;
    unsigned flags;
    unsigned long long id;
    struct host_range *next;
};

static struct host_range *ranges;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void cu_host_track(CUcontext c, void *p, size_t size, unsigned flags)
{
    struct host_range *r = malloc(sizeof *r);
    if (!r)
        return; /* only pointer queries lose this buffer */
    pthread_mutex_lock(&lock);
    *r = (struct host_range){c, (uintptr_t)p, size, flags, cu_next_id(), ranges};
    ranges = r;
    pthread_mutex_unlock(&lock);
}

/* Remove the range starting at p; 0 if there is none. */
static int untrack(const void *p, unsigned want_registered)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (struct host_range **q = &ranges; *q; q = &(*q)->next)
        if ((*q)->base == (uintptr_t)p && ((*q)->flags & REGISTERED) == want_registered) {
            struct host_range *gone = *q;
            *q = gone->next;
            free(gone);
            found = 1;
            break;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

void cu_host_untrack(const void *p)
{
    untrack(p, 0);
}

void cu_host_forget(CUcontext c)
{
    pthread_mutex_lock(&lock);
    for (struct host_range **q = &ranges; *q;) {
        struct host_range *r = *q;
        if (r->ctx == c && !(r->flags & REGISTERED)) { /* pinned: gone with the handle */
            *q = r->next;
            free(r);
        } else {
            q = &r->next;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* The known host range holding [p, p + n) (n 0 or 1: holding p), copied to *out. */
int cu_host_find(const void *p, size_t n, struct cu_host_info *out)
{
    int found = 0;
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&lock);
    for (struct host_range *r = ranges; r && !found; r = r->next)
        if (a >= r->base && a - r->base < r->size && (n <= 1 || n <= r->size - (a - r->base))) {
            *out = (struct cu_host_info){r->ctx, (void *)r->base, r->size,
                                         r->flags & ~REGISTERED, r->id,
                                         !!(r->flags & REGISTERED)};
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

/* 1 if [a, a + n) overlaps a known range. */
static int overlaps(uintptr_t a, size_t n)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (struct host_range *r = ranges; r && !found; r = r->next)
        found = a < r->base + r->size && r->base < a + n;
    pthread_mutex_unlock(&lock);
    return found;
}

API CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (r)
        return r;
    if (!p || !size || (flags & ~known) || (uintptr_t)p + size < (uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemHostRegister: I/O memory cannot be "
                       "mapped for the emulated device");
    if (overlaps((uintptr_t)p, size))
        return cu_fail(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                       "cuMemHostRegister: %p+%zu overlaps pinned or registered memory", p, size);
    cu_host_track(c, p, size, flags | REGISTERED);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostUnregister(void *p)
{
    CURRENT(c);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return untrack(p, REGISTERED) ? CUDA_SUCCESS
        : cu_fail(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister: %p starts no "
                  "registered range", p);
}

API CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    struct cu_host_info h;
    CURRENT(c);
    if (!flags || !p)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_host_find(p, 1, &h))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetFlags: %p is not pinned or "
                       "registered host memory", p);
    *flags = h.flags;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    struct cu_host_info h;
    CURRENT(c);
    if (!pdptr || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_host_find(p, 1, &h) && h.registered)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemHostGetDevicePointer: %p is registered "
                       "host memory, which kernels cannot reach here (use cuMemHostAlloc)", p);
    *pdptr = gvirtget(c->h, p);
    return *pdptr ? CUDA_SUCCESS : cu_fail(CUDA_ERROR_INVALID_VALUE, "%s", gdev_last_error());
}
