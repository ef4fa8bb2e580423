/* cudaGraphExecUpdate: an executable graph takes the parameters of another graph of the same
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
