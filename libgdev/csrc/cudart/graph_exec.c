/* CUDA graphs: instantiation (a topological order, child graphs inlined, a cycle refused)
 * and launch (the operations issued in that order in the launch's stream).  The changes an
 * executable graph takes are in graph_update.c. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static cudaError_t push(struct CUgraphExec_st *x, const struct CUgraphNode_st *key,
                        const struct op *op)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        struct xnode *p = realloc(x->v, cap * sizeof *p);
        if (!p)
            return cudaErrorMemoryAllocation;
        x->v = p;
        x->cap = cap;
    }
    struct xnode *xn = &x->v[x->n];
    *xn = (struct xnode){.key = key};
    cudaError_t e = rt_op_copy(&xn->op, op);
    x->n += !e;
    return e;
}

/* Kahn's algorithm over g: order[] gets the nodes' indices, sources first, ties in creation
 * order; returns how many were ordered (fewer than g->n: a cycle). */
static size_t topo(const struct CUgraph_st *g, size_t *order, size_t *indeg)
{
    size_t head = 0, tail = 0;
    rt_graph_number(g);
    for (size_t i = 0; i < g->n; i++)
        if (!(indeg[i] = g->nodes[i]->ndeps))
            order[tail++] = i;
    while (head < tail) {
        const struct CUgraphNode_st *done = g->nodes[order[head++]];
        for (size_t j = 0; j < g->n; j++)
            for (size_t d = 0; d < g->nodes[j]->ndeps; d++)
                if (g->nodes[j]->deps[d] == done && !--indeg[j])
                    order[tail++] = j;
    }
    return tail;
}

/* Append g's operations to x in a topological order, child graphs inlined in place. */
static cudaError_t flatten(struct CUgraphExec_st *x, const struct CUgraph_st *g,
                           cudaGraphNode_t *bad)
{
    size_t *order = calloc(2 * g->n + 1, sizeof *order);
    cudaError_t e = order ? cudaSuccess : cudaErrorMemoryAllocation;
    if (!e && topo(g, order, order + g->n) < g->n) {
        e = cudaErrorInvalidValue; /* a cycle: some node never became ready */
        for (size_t i = 0; i < g->n && bad; i++)
            *bad = order[g->n + i] ? g->nodes[i] : *bad;
    }
    for (size_t i = 0; !e && i < g->n; i++) {
        const struct CUgraphNode_st *nd = g->nodes[order[i]];
        if (nd->op.type == cudaGraphNodeTypeGraph)
            e = flatten(x, nd->op.u.child, bad);
        else if (nd->op.type != cudaGraphNodeTypeEmpty)
            e = push(x, nd, &nd->op);
    }
    free(order);
    return e;
}

static void exec_free(struct CUgraphExec_st *x)
{
    for (size_t i = 0; i < x->n; i++)
        rt_op_free(&x->v[i].op);
    free(x->v);
    rt_graph_free(x->src);
    free(x);
}

static cudaError_t instantiate(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags,
                               cudaGraphNode_t *bad)
{
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return cudaErrorMemoryAllocation;
    x->flags = flags;
    cudaError_t e = flatten(x, g, bad);
    if (!e)
        e = rt_graph_clone(&x->src, g);
    if (e) {
        exec_free(x);
        return e;
    }
    *out = x;
    return cudaSuccess;
}

#define KNOWN_FLAGS (cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload \
                     | cudaGraphInstantiateFlagDeviceLaunch \
                     | cudaGraphInstantiateFlagUseNodePriority)

/* Device-side launch is refused: kernels here cannot launch graphs. */
API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
                                     unsigned long long flags)
{
    if (!exec || !g || (flags & ~(unsigned long long)KNOWN_FLAGS))
        return rt_set(cudaErrorInvalidValue);
    if (flags & cudaGraphInstantiateFlagDeviceLaunch)
        return rt_set(cudaErrorNotSupported);
    return rt_set(instantiate(exec, g, flags, NULL));
}

API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t g,
                                              unsigned long long flags)
{
    return cudaGraphInstantiate(exec, g, flags);
}

API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *exec, cudaGraph_t g,
                                               cudaGraphInstantiateParams *p)
{
    if (!exec || !g || !p || (p->flags & ~(unsigned long long)KNOWN_FLAGS))
        return rt_set(cudaErrorInvalidValue);
    if (p->flags & cudaGraphInstantiateFlagDeviceLaunch)
        return rt_set(cudaErrorNotSupported);
    p->errNode_out = NULL;
    cudaError_t e = instantiate(exec, g, p->flags, &p->errNode_out);
    p->result_out = !e ? cudaGraphInstantiateSuccess
                       : p->errNode_out ? cudaGraphInstantiateInvalidStructure
                                        : cudaGraphInstantiateError;
    if (!e && (p->flags & cudaGraphInstantiateFlagUpload))
        e = cudaGraphUpload(*exec, p->uploadStream);
    return rt_set(e);
}

API cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t x, unsigned long long *flags)
{
    if (!x || !flags)
        return rt_set(cudaErrorInvalidValue);
    *flags = x->flags;
    return cudaSuccess;
}

API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    if (!x)
        return rt_set(cudaErrorInvalidValue);
    exec_free(x);
    return cudaSuccess;
}

/* Nothing to move ahead of time: the operations live in this process until issued. */
API cudaError_t cudaGraphUpload(cudaGraphExec_t x, cudaStream_t s)
{
    (void)s;
    return x ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

/* x as a graph: its operations as they are now (per-node changes included, disabled nodes
 * left out), each after the one before. */
static cudaError_t as_graph(cudaGraphExec_t x, struct CUgraph_st **out)
{
    cudaGraphNode_t prev = NULL;
    cudaError_t e = rt_graph_new(out);
    for (size_t i = 0; !e && i < x->n; i++) {
        struct op op;
        if (!x->v[i].disabled && !(e = rt_op_copy(&op, &x->v[i].op)))
            e = rt_graph_add(*out, &op, &prev, prev ? 1 : 0, &prev);
    }
    if (e)
        rt_graph_free(*out);
    return e;
}

/* On a capturing stream the whole graph becomes one child-graph node of the capture. */
API cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    struct CUgraph_st *g;
    if (!x)
        return rt_set(cudaErrorInvalidValue);
    if (rt_capturing(s)) {
        cudaError_t e = as_graph(x, &g);
        if (!e) {
            e = rt_capture_graph(s, g);
            rt_graph_free(g);
        }
        return rt_set(e);
    }
    cudaError_t e = rt_cond_reset(x->src, s);
    for (size_t i = 0; i < x->n && !e; i++)
        if (!x->v[i].disabled)
            e = rt_op_issue(&x->v[i].op, s);
    return rt_set(e);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaGraphInstantiateWithParams) RT_PTSZ(cudaGraphLaunch) RT_PTSZ(cudaGraphUpload)
