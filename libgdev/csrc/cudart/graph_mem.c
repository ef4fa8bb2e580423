/* Graph memory: memory-allocation and memory-free nodes (explicit, or cudaMallocAsync and
 * cudaFreeAsync captured).  A graph allocation is made when its node is created, so its
 * address is fixed for the life of the graph, as CUDA promises; it is shared (counted) by the
 * node, its clones and every executable graph instantiated from them, and goes back to the
 * device when the last of them is destroyed.  Running an allocation or free node does
 * nothing: the memory stays reserved for the graph between launches (CUDA's graph memory
 * pool), so a free node, cudaFree or cudaFreeAsync of a graph allocation only hands it back
 * to the graph, and cudaDeviceGraphMemTrim has nothing unused to release. */
#include <stdint.h>
#include <stdlib.h>

#include "graph.h"

struct gmem {
    void *ptr;
    size_t size;
    int device;
    int refs;
    struct gmem *next;
};

static struct gmem *owned; /* every live graph allocation */
static size_t used[MAX_DEVICES], used_high[MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A new graph allocation of size bytes on the current device, one reference. */
static cudaError_t gmem_new(size_t size, struct gmem **out)
{
    struct gmem *m = calloc(1, sizeof *m);
    if (!m)
        return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMalloc(&m->ptr, size);
    if (e) {
        free(m);
        return e;
    }
    m->size = size;
    m->device = rt_device();
    m->refs = 1;
    pthread_mutex_lock(&lock);
    m->next = owned;
    owned = m;
    used[m->device] += size;
    used_high[m->device] = used[m->device] > used_high[m->device] ? used[m->device]
                                                                  : used_high[m->device];
    pthread_mutex_unlock(&lock);
    *out = m;
    return cudaSuccess;
}

void rt_gmem_ref(struct gmem *m)
{
    pthread_mutex_lock(&lock);
    m->refs++;
    pthread_mutex_unlock(&lock);
}

void rt_gmem_unref(struct gmem *m)
{
    struct gmem *gone = NULL;
    pthread_mutex_lock(&lock);
    if (!--m->refs) {
        for (struct gmem **p = &owned; *p; p = &(*p)->next)
            if (*p == m) {
                *p = m->next;
                break;
            }
        used[m->device] -= m->size;
        gone = m;
    }
    pthread_mutex_unlock(&lock);
    if (!gone)
        return;
    int cur = rt_device();
    if (gone->device != cur)
        cudaSetDevice(gone->device);
    cudaFree(gone->ptr);
    if (gone->device != cur)
        cudaSetDevice(cur);
    free(gone);
}

int rt_gmem_owned(const void *p)
{
    int yes = 0;
    pthread_mutex_lock(&lock);
    for (struct gmem *m = owned; m && !yes; m = m->next)
        yes = (const uint8_t *)p >= (uint8_t *)m->ptr
              && (const uint8_t *)p < (uint8_t *)m->ptr + m->size;
    pthread_mutex_unlock(&lock);
    return yes;
}

/* An allocation node's operation for params (checked), its memory made now. */
cudaError_t rt_alloc_op(struct op *op, struct cudaMemAllocNodeParams *p)
{
    int dev = rt_device();
    if (!p || !p->bytesize || p->poolProps.allocType != cudaMemAllocationTypePinned
        || p->poolProps.location.type != cudaMemLocationTypeDevice
        || p->poolProps.location.id != dev || (p->accessDescCount && !p->accessDescs))
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < p->accessDescCount; i++) { /* the device itself only */
        const struct cudaMemAccessDesc *d = &p->accessDescs[i];
        if (d->location.type != cudaMemLocationTypeDevice
            || (d->location.id == dev) != (d->flags == cudaMemAccessFlagsProtReadWrite))
            return cudaErrorInvalidValue;
    }
    *op = (struct op){.type = cudaGraphNodeTypeMemAlloc};
    cudaError_t e = gmem_new(p->bytesize, &op->u.alloc.mem);
    if (e)
        return e;
    p->dptr = op->u.alloc.mem->ptr;
    op->u.alloc.params = *p;
    op->u.alloc.params.accessDescs = NULL; /* not kept: the caller's array */
    op->u.alloc.params.accessDescCount = 0;
    return cudaSuccess;
}

API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *out, cudaGraph_t g,
                                         const cudaGraphNode_t *deps, size_t n,
                                         struct cudaMemAllocNodeParams *p)
{
    struct op op;
    if (!out || !g || (n && !deps))
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_alloc_op(&op, p);
    return rt_set(e ? e : rt_graph_add(g, &op, deps, n, out));
}

API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *out, cudaGraph_t g,
                                        const cudaGraphNode_t *deps, size_t n, void *dptr)
{
    struct op op = {.type = cudaGraphNodeTypeMemFree, .u.freed = dptr};
    if (!out || !g || (n && !deps) || !rt_gmem_owned(dptr))
        return rt_set(cudaErrorInvalidValue);
    return rt_set(rt_graph_add(g, &op, deps, n, out));
}

API cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t nd,
                                               struct cudaMemAllocNodeParams *p)
{
    if (!nd || !p || nd->op.type != cudaGraphNodeTypeMemAlloc)
        return rt_set(cudaErrorInvalidValue);
    *p = nd->op.u.alloc.params;
    return cudaSuccess;
}

API cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t nd, void *dptr)
{
    if (!nd || !dptr || nd->op.type != cudaGraphNodeTypeMemFree)
        return rt_set(cudaErrorInvalidValue);
    *(void **)dptr = nd->op.u.freed;
    return cudaSuccess;
}

/* Used = reserved: graph memory is exactly the live graph allocations. */
API cudaError_t cudaDeviceGetGraphMemAttribute(int dev, enum cudaGraphMemAttributeType attr,
                                               void *value)
{
    cudaError_t e = rt_valid_device(dev);
    if (!e && !value)
        e = cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    pthread_mutex_lock(&lock);
    uint64_t *v = value;
    if (attr == cudaGraphMemAttrUsedMemCurrent || attr == cudaGraphMemAttrReservedMemCurrent)
        *v = used[dev];
    else if (attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh)
        *v = used_high[dev];
    else
        e = cudaErrorInvalidValue;
    pthread_mutex_unlock(&lock);
    return rt_set(e);
}

/* Only the high-water marks can be set, to 0 (they restart from the current use). */
API cudaError_t cudaDeviceSetGraphMemAttribute(int dev, enum cudaGraphMemAttributeType attr,
                                               void *value)
{
    cudaError_t e = rt_valid_device(dev);
    if (!e && (!value || *(uint64_t *)value
               || (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh)))
        e = cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    pthread_mutex_lock(&lock);
    used_high[dev] = used[dev];
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaDeviceGraphMemTrim(int dev)
{
    return rt_set(rt_valid_device(dev));
}
