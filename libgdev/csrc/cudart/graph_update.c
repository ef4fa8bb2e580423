/* Changing an executable graph: one node's parameters or event, enabling a node, and
 * cudaGraphExecUpdate: an executable graph takes the parameters of another graph of the same
 * topology.  Nodes pair by creation order (as CUDA pairs the nodes of graphs built by the same
 * sequence of calls); each pair must have the same type and the same dependencies (by index),
 * and child graphs the same topology in turn.  Kernel functions may change (one context). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static int same_deps(const struct CUgraphNode_st *a, const struct CUgraphNode_st *b)
{
    if (a->ndeps != b->ndeps)
        return 0;
    for (size_t i = 0; i < a->ndeps; i++) {
        int found = 0;
        for (size_t k = 0; k < b->ndeps && !found; k++)
            found = a->deps[i]->index == b->deps[k]->index;
        if (!found)
            return 0;
    }
    return 1;
}

/* Why a (the instantiated topology) and b differ; the node of b to blame in *bad. */
static enum cudaGraphExecUpdateResult compare(const struct CUgraph_st *a,
                                              const struct CUgraph_st *b, cudaGraphNode_t *bad)
{
    rt_graph_number(a);
    rt_graph_number(b);
    if (a->n != b->n)
        return cudaGraphExecUpdateErrorTopologyChanged;
    for (size_t i = 0; i < a->n; i++) {
        const struct CUgraphNode_st *x = a->nodes[i];
        *bad = b->nodes[i];
        if (x->op.type != b->nodes[i]->op.type)
            return cudaGraphExecUpdateErrorNodeTypeChanged;
        if (!same_deps(x, b->nodes[i]))
            return cudaGraphExecUpdateErrorTopologyChanged;
    }
    for (size_t i = 0; i < a->n; i++) /* numbering is per graph: children after the parents */
        if (a->nodes[i]->op.type == cudaGraphNodeTypeGraph) {
            cudaGraphNode_t inner;
            if (compare(a->nodes[i]->op.u.child, b->nodes[i]->op.u.child, &inner)) {
                *bad = b->nodes[i];
                return cudaGraphExecUpdateErrorTopologyChanged;
            }
        }
    *bad = NULL;
    return cudaGraphExecUpdateSuccess;
}

API cudaError_t cudaGraphExecUpdate(cudaGraphExec_t x, cudaGraph_t g,
                                    cudaGraphExecUpdateResultInfo *info)
{
    cudaGraphNode_t bad = NULL;
    cudaGraphExec_t fresh = NULL;
    if (!x || !g || !info)
        return rt_set(cudaErrorInvalidValue);
    *info = (cudaGraphExecUpdateResultInfo){.result = compare(x->src, g, &bad)};
    info->errorNode = bad;
    if (info->result)
        return rt_set(cudaErrorGraphExecUpdateFailure);
    cudaError_t e = cudaGraphInstantiate(&fresh, g, x->flags);
    if (e || fresh->n != x->n) { /* same topology: same issue order and length */
        info->result = cudaGraphExecUpdateError;
        if (fresh)
            cudaGraphExecDestroy(fresh);
        return rt_set(e ? e : cudaErrorGraphExecUpdateFailure);
    }
    for (size_t i = 0; i < x->n; i++) { /* new operations, the old keys and enables */
        struct op old = x->v[i].op;
        x->v[i].op = fresh->v[i].op;
        fresh->v[i].op = old;
    }
    struct CUgraph_st *src = x->src;
    x->src = fresh->src;
    fresh->src = src;
    cudaGraphExecDestroy(fresh);
    return cudaSuccess;
}

/* x's operation from graph node nd, if it has the type wanted. */
static struct xnode *xfind(cudaGraphExec_t x, cudaGraphNode_t nd, enum cudaGraphNodeType t)
{
    for (size_t i = 0; x && nd && i < x->n; i++)
        if (x->v[i].key == nd)
            return x->v[i].op.type == t ? &x->v[i] : NULL;
    return NULL;
}

API cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                 const struct cudaKernelNodeParams *p)
{
    struct xnode *xn = xfind(x, nd, cudaGraphNodeTypeKernel);
    struct op op = {.type = cudaGraphNodeTypeKernel};
    cudaError_t e = xn && p ? rt_kernel_op(&op.u.k, p) : cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    rt_kattrs_move(&op.u.k, &xn->op.u.k);
    rt_op_free(&xn->op);
    xn->op = op;
    return cudaSuccess;
}

API cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                 const struct cudaMemcpy3DParms *p)
{
    struct xnode *xn = xfind(x, nd, cudaGraphNodeTypeMemcpy);
    if (!xn || !p || !p->srcPtr.ptr || !p->dstPtr.ptr)
        return rt_set(cudaErrorInvalidValue);
    if (p->srcArray || p->dstArray)
        return rt_set(cudaErrorNotSupported);
    xn->op.u.copy = *p;
    return cudaSuccess;
}

API cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                   void *dst, const void *src, size_t count,
                                                   enum cudaMemcpyKind kind)
{
    struct xnode *xn = xfind(x, nd, cudaGraphNodeTypeMemcpy);
    if (!xn || !dst || !src || !count)
        return rt_set(cudaErrorInvalidValue);
    struct cudaMemcpy3DParms *c = &xn->op.u.copy;
    *c = (struct cudaMemcpy3DParms){
        .srcPtr = {.ptr = (void *)src, .pitch = count, .xsize = count, .ysize = 1},
        .dstPtr = {.ptr = dst, .pitch = count, .xsize = count, .ysize = 1},
        .extent = {.width = count, .height = 1, .depth = 1}, .kind = kind};
    return cudaSuccess;
}

API cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                 const struct cudaMemsetParams *p)
{
    struct xnode *xn = xfind(x, nd, cudaGraphNodeTypeMemset);
    if (!xn || rt_memset_valid(p))
        return rt_set(cudaErrorInvalidValue);
    xn->op.u.set = *p;
    return cudaSuccess;
}

static cudaError_t set_event(cudaGraphExec_t x, cudaGraphNode_t nd, cudaEvent_t ev,
                             enum cudaGraphNodeType t)
{
    struct xnode *xn = xfind(x, nd, t);
    if (!xn || !ev)
        return rt_set(cudaErrorInvalidValue);
    xn->op.u.event = ev;
    return cudaSuccess;
}

API cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                     cudaEvent_t ev)
{
    return set_event(x, nd, ev, cudaGraphNodeTypeEventRecord);
}

API cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                   cudaEvent_t ev)
{
    return set_event(x, nd, ev, cudaGraphNodeTypeWaitEvent);
}

API cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t nd,
                                               const struct cudaHostNodeParams *p)
{
    struct xnode *xn = xfind(x, nd, cudaGraphNodeTypeHost);
    if (!xn || !p || !p->fn)
        return rt_set(cudaErrorInvalidValue);
    xn->op.u.host = *p;
    return cudaSuccess;
}

/* Kernel, copy and memset nodes can be switched off (they then do nothing) and on again. */
API cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t x, cudaGraphNode_t nd, unsigned int on)
{
    int n = 0;
    enum cudaGraphNodeType t = nd ? nd->op.type : cudaGraphNodeTypeEmpty;
    if (t != cudaGraphNodeTypeKernel && t != cudaGraphNodeTypeMemcpy
        && t != cudaGraphNodeTypeMemset)
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; x && i < x->n; i++)
        if (x->v[i].key == nd) {
            x->v[i].disabled = !on;
            n++;
        }
    return n ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t x, cudaGraphNode_t nd,
                                        unsigned int *on)
{
    for (size_t i = 0; x && nd && on && i < x->n; i++)
        if (x->v[i].key == nd) {
            *on = !x->v[i].disabled;
            return cudaSuccess;
        }
    return rt_set(cudaErrorInvalidValue);
}
