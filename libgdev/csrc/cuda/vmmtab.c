/* The process-wide records of libcuda's virtual memory management: allocations, ranges
 * and the per-device holder handles (theory of operation in vmm.h). */
#include <errno.h>
#include <stdlib.h>

#include "vmm.h"

#define HOLDERS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_alloc *allocs;
static struct vmm_range *ranges;
static Ghandle holders[HOLDERS]; /* kept open until the process ends */

void vmm_lock(void)
{
    pthread_mutex_lock(&lock);
}

void vmm_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

int vmm_dead(CUcontext ctx)
{
    return ctx && ctx->destroyed;
}

CUresult vmm_owner(CUdevice dev, Ghandle *h, CUcontext *ctx)
{
    CUcontext c = NULL;
    if (!cu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= cu_device_count() || dev >= HOLDERS)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "memory location: no device %d", dev);
    if (cu_current(&c) == CUDA_SUCCESS && c->dev == dev) {
        *h = c->h;
        *ctx = c;
        return CUDA_SUCCESS;
    }
    vmm_lock();
    if (!holders[dev])
        holders[dev] = gopen(dev);
    *h = holders[dev];
    vmm_unlock();
    *ctx = NULL;
    if (!*h)
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "device %d: %s", dev, gdev_last_error());
    return CUDA_SUCCESS;
}

struct vmm_alloc *vmm_alloc_of(CUmemGenericAllocationHandle v)
{
    for (struct vmm_alloc *a = allocs; a; a = a->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)a == v)
            return a;
    return NULL;
}

struct vmm_alloc *vmm_alloc_find(Ghandle h, uint64_t id)
{
    for (struct vmm_alloc *a = allocs; a; a = a->next)
        if (a->h == h && a->id == id)
            return a;
    return NULL;
}

struct vmm_alloc *vmm_alloc_new(Ghandle h, CUcontext ctx, uint64_t id, CUdevice dev)
{
    struct vmm_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    *a = (struct vmm_alloc){h, ctx, id, dev, 1, NULL};
    vmm_lock();
    a->next = allocs;
    allocs = a;
    vmm_unlock();
    return a;
}

void vmm_alloc_drop(struct vmm_alloc *a)
{
    for (struct vmm_alloc **p = &allocs; *p; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            free(a);
            return;
        }
}

/* Contexts are separate address spaces, so two of them may have a range at the same
 * address: the current context's wins, then a live one, then a dead one. */
struct vmm_range *vmm_range_of(uint64_t ptr)
{
    struct vmm_range *best = NULL;
    CUcontext cur = NULL;
    int rank = 0;
    if (cu_current(&cur) != CUDA_SUCCESS)
        cur = NULL;
    for (struct vmm_range *r = ranges; r; r = r->next) {
        if (ptr < r->va || ptr - r->va >= r->size)
            continue;
        int k = cur && r->ctx == cur ? 3 : !vmm_dead(r->ctx) ? 2 : 1;
        if (k > rank) {
            best = r;
            rank = k;
        }
    }
    return best;
}

CUresult vmm_range_new(uint64_t va, uint64_t size, Ghandle h, CUcontext ctx, CUdevice dev)
{
    struct vmm_range *r = calloc(1, sizeof *r);
    if (!r)
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAddressReserve: no host memory");
    *r = (struct vmm_range){va, size, h, ctx, dev, NULL};
    vmm_lock();
    r->next = ranges;
    ranges = r;
    vmm_unlock();
    return CUDA_SUCCESS;
}

void vmm_range_drop(struct vmm_range *r)
{
    for (struct vmm_range **p = &ranges; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            free(r);
            return;
        }
}
