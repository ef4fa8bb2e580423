/* The generic node calls of CUDA 12.2+, over the per-type ones (graph_nodes.c, graph_mem.c,
 * graph_update.c; conditional nodes graph_cond.c): cudaGraphAddNode makes a node of any type
 * from one cudaGraphNodeParams, cudaGraphNodeSetParams and cudaGraphExecNodeSetParams give a
 * kernel, copy, memset, host or event node new parameters (other types:
 * cudaErrorNotSupported, as CUDA refuses changes it does not support).  Edge data may be
 * given: every edge is a full dependency here (a programmatic edge lets CUDA overlap the two
 * nodes; waiting for the whole upstream node is one valid schedule of it). */
#include <string.h>

#include "graph.h"

static struct cudaKernelNodeParams kernel_v1(const struct cudaKernelNodeParamsV2 *k)
{
    return (struct cudaKernelNodeParams){.func = k->func, .gridDim = k->gridDim,
                                         .blockDim = k->blockDim,
                                         .sharedMemBytes = k->sharedMemBytes,
                                         .kernelParams = k->kernelParams, .extra = k->extra};
}

static struct cudaMemsetParams memset_v1(const struct cudaMemsetParamsV2 *m)
{
    return (struct cudaMemsetParams){.dst = m->dst, .pitch = m->pitch, .value = m->value,
                                     .elementSize = m->elementSize, .width = m->width,
                                     .height = m->height};
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
    case cudaGraphNodeTypeKernel: {
        struct cudaKernelNodeParams k = kernel_v1(&p->kernel);
        return cudaGraphAddKernelNode(out, g, deps, n, &k);
    }
    case cudaGraphNodeTypeMemcpy:
        if (p->memcpy.flags)
            return cudaErrorInvalidValue;
        return cudaGraphAddMemcpyNode(out, g, deps, n, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
        struct cudaMemsetParams m = memset_v1(&p->memset);
        return cudaGraphAddMemsetNode(out, g, deps, n, &m);
    }
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

/* New parameters for node nd (exec NULL) or for its operation in exec; p's type must be the
 * node's. */
static cudaError_t set(cudaGraphExec_t x, cudaGraphNode_t nd, struct cudaGraphNodeParams *p)
{
    if (!nd || !p || p->type != nd->op.type)
        return cudaErrorInvalidValue;
    switch (p->type) {
    case cudaGraphNodeTypeKernel: {
        struct cudaKernelNodeParams k = kernel_v1(&p->kernel);
        return x ? cudaGraphExecKernelNodeSetParams(x, nd, &k)
                 : cudaGraphKernelNodeSetParams(nd, &k);
    }
    case cudaGraphNodeTypeMemcpy:
        return x ? cudaGraphExecMemcpyNodeSetParams(x, nd, &p->memcpy.copyParams)
                 : cudaGraphMemcpyNodeSetParams(nd, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
        struct cudaMemsetParams m = memset_v1(&p->memset);
        return x ? cudaGraphExecMemsetNodeSetParams(x, nd, &m)
                 : cudaGraphMemsetNodeSetParams(nd, &m);
    }
    case cudaGraphNodeTypeHost: {
        struct cudaHostNodeParams h = {.fn = p->host.fn, .userData = p->host.userData};
        return x ? cudaGraphExecHostNodeSetParams(x, nd, &h) : cudaGraphHostNodeSetParams(nd, &h);
    }
    case cudaGraphNodeTypeEventRecord:
        return x ? cudaGraphExecEventRecordNodeSetEvent(x, nd, p->eventRecord.event)
                 : cudaGraphEventRecordNodeSetEvent(nd, p->eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
        return x ? cudaGraphExecEventWaitNodeSetEvent(x, nd, p->eventWait.event)
                 : cudaGraphEventWaitNodeSetEvent(nd, p->eventWait.event);
    default:
        return cudaErrorNotSupported;
    }
}

API cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t nd, struct cudaGraphNodeParams *p)
{
    return rt_set(set(NULL, nd, p));
}

API cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t nd,
                                           struct cudaGraphNodeParams *p)
{
    return x ? rt_set(set(x, nd, p)) : rt_set(cudaErrorInvalidValue);
}
