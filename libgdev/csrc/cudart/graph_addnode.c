/* cudaGraphAddNode (CUDA 12.2+): a node of any type from one cudaGraphNodeParams, through the
 * per-type creation calls (graph_nodes.c, graph_mem.c) or, for conditional nodes, graph_cond.c.
 * Edge data may be given: every edge is a full dependency here (a programmatic edge lets CUDA
 * overlap the two nodes; waiting for the whole upstream node is one valid schedule of it). */
#include <string.h>

#include "graph.h"

static cudaError_t add_kernel(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                              size_t n, const struct cudaKernelNodeParamsV2 *k)
{
    struct cudaKernelNodeParams p = {.func = k->func, .gridDim = k->gridDim,
                                     .blockDim = k->blockDim,
                                     .sharedMemBytes = k->sharedMemBytes,
                                     .kernelParams = k->kernelParams, .extra = k->extra};
    return cudaGraphAddKernelNode(out, g, deps, n, &p);
}

static cudaError_t add_memset(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                              size_t n, const struct cudaMemsetParamsV2 *m)
{
    struct cudaMemsetParams p = {.dst = m->dst, .pitch = m->pitch, .value = m->value,
                                 .elementSize = m->elementSize, .width = m->width,
                                 .height = m->height};
    return cudaGraphAddMemsetNode(out, g, deps, n, &p);
}

static cudaError_t add_alloc(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                             size_t n, struct cudaMemAllocNodeParamsV2 *a)
{
    struct cudaMemAllocNodeParams p = {.poolProps = a->poolProps, .accessDescs = a->accessDescs,
                                       .accessDescCount = a->accessDescCount,
                                       .bytesize = a->bytesize};
    cudaError_t e = cudaGraphAddMemAllocNode(out, g, deps, n, &p);
    if (!e)
        a->dptr = p.dptr;
    return e;
}

static cudaError_t add_conditional(cudaGraphNode_t *out, cudaGraph_t g,
                                   const cudaGraphNode_t *deps, size_t n,
                                   struct cudaConditionalNodeParams *c)
{
    struct op op;
    cudaError_t e = rt_cond_op(&op, c, g);
    if (!e)
        e = rt_graph_add(g, &op, deps, n, out);
    if (e)
        c->phGraph_out = NULL;
    return e;
}

static cudaError_t add(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                       size_t n, struct cudaGraphNodeParams *p)
{
    switch (p->type) {
    case cudaGraphNodeTypeKernel: return add_kernel(out, g, deps, n, &p->kernel);
    case cudaGraphNodeTypeMemcpy:
        if (p->memcpy.flags)
            return cudaErrorInvalidValue;
        return cudaGraphAddMemcpyNode(out, g, deps, n, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: return add_memset(out, g, deps, n, &p->memset);
    case cudaGraphNodeTypeHost: {
        struct cudaHostNodeParams h = {.fn = p->host.fn, .userData = p->host.userData};
        return cudaGraphAddHostNode(out, g, deps, n, &h);
    }
    case cudaGraphNodeTypeGraph: /* the child is cloned; moving it in is not supported */
        if (p->graph.ownership != cudaGraphChildGraphOwnershipClone)
            return cudaErrorNotSupported;
        return cudaGraphAddChildGraphNode(out, g, deps, n, p->graph.graph);
    case cudaGraphNodeTypeEmpty: return cudaGraphAddEmptyNode(out, g, deps, n);
    case cudaGraphNodeTypeEventRecord:
        return cudaGraphAddEventRecordNode(out, g, deps, n, p->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
        return cudaGraphAddEventWaitNode(out, g, deps, n, p->eventWait.event);
    case cudaGraphNodeTypeMemAlloc: return add_alloc(out, g, deps, n, &p->alloc);
    case cudaGraphNodeTypeMemFree: return cudaGraphAddMemFreeNode(out, g, deps, n, p->free.dptr);
    case cudaGraphNodeTypeConditional:
        return add_conditional(out, g, deps, n, &p->conditional);
    default: /* external semaphores */
        return cudaErrorNotSupported;
    }
}

API cudaError_t cudaGraphAddNode(cudaGraphNode_t *out, cudaGraph_t g,
                                 const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges,
                                 size_t n, struct cudaGraphNodeParams *p)
{
    (void)edges;
    if (!out || !g || !p || (n && !deps))
        return rt_set(cudaErrorInvalidValue);
    return rt_set(add(out, g, deps, n, p));
}
