/* CUDA graphs: the public calls on a graph's structure: create, clone, destroy, nodes and
 * edges, and the queries over them.  Edge data other than the default (full completion, no
 * ports) is refused with cudaErrorNotSupported; a query returns default edge data. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "graph.h"

API cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags)
{
    if (!g || flags)
        return rt_set(cudaErrorInvalidValue);
    return rt_set(rt_graph_new(g));
}

API cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    if (!g)
        return rt_set(cudaErrorInvalidValue);
    rt_graph_free(g);
    return cudaSuccess;
}

API cudaError_t cudaGraphClone(cudaGraph_t *out, cudaGraph_t g)
{
    if (!out || !g)
        return rt_set(cudaErrorInvalidValue);
    return rt_set(rt_graph_clone(out, g));
}

API cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *out, cudaGraphNode_t orig,
                                         cudaGraph_t clone)
{
    if (!out || !orig || !clone)
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < clone->n; i++)
        if (clone->nodes[i]->origin == orig) {
            *out = clone->nodes[i];
            return cudaSuccess;
        }
    return rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaGraphNodeGetType(cudaGraphNode_t nd, enum cudaGraphNodeType *type)
{
    if (!nd || !type)
        return rt_set(cudaErrorInvalidValue);
    *type = nd->op.type;
    return cudaSuccess;
}

/* After k of *count entries were filled: the rest of out is NULL and *count how many were
 * written (or, without out, how many there are), as CUDA's list queries answer. */
static void finish(cudaGraphNode_t *out, size_t k, size_t *count)
{
    for (size_t i = k; out && i < *count; i++)
        out[i] = NULL;
    *count = out && k > *count ? *count : k;
}

/* Report up to *count of the graph's nodes that have(g, i) selects. */
static void report(size_t n, int (*have)(cudaGraph_t, size_t), cudaGraph_t g,
                   cudaGraphNode_t *out, size_t *count)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (have(g, i)) {
            if (out && k < *count)
                out[k] = g->nodes[i];
            k++;
        }
    finish(out, k, count);
}

static int any(cudaGraph_t g, size_t i) { return g && i < g->n; }
static int root(cudaGraph_t g, size_t i) { return g->nodes[i]->ndeps == 0; }

API cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *count)
{
    if (!g || !count)
        return rt_set(cudaErrorInvalidValue);
    report(g->n, any, g, nodes, count);
    return cudaSuccess;
}

API cudaError_t cudaGraphGetRootNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *count)
{
    if (!g || !count)
        return rt_set(cudaErrorInvalidValue);
    report(g->n, root, g, nodes, count);
    return cudaSuccess;
}

static void zero_edges(cudaGraphEdgeData *data, size_t n)
{
    if (data)
        memset(data, 0, n * sizeof *data);
}

/* Edges in the order of their head nodes' creation, then of the heads' dependencies. */
API cudaError_t cudaGraphGetEdges(cudaGraph_t g, cudaGraphNode_t *from, cudaGraphNode_t *to,
                                  cudaGraphEdgeData *data, size_t *count)
{
    if (!g || !count || (!from != !to) || (data && !from))
        return rt_set(cudaErrorInvalidValue);
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++, k++)
            if (from && k < *count) {
                from[k] = g->nodes[i]->deps[d];
                to[k] = g->nodes[i];
            }
    if (from)
        zero_edges(data, k < *count ? k : *count);
    for (size_t i = k; from && i < *count; i++)
        to[i] = NULL;
    finish(from, k, count);
    return cudaSuccess;
}

API cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t nd, cudaGraphNode_t *deps,
                                             cudaGraphEdgeData *data, size_t *count)
{
    if (!nd || !count || (data && !deps))
        return rt_set(cudaErrorInvalidValue);
    size_t n = deps && *count < nd->ndeps ? *count : nd->ndeps;
    if (deps) {
        memcpy(deps, nd->deps, n * sizeof *deps);
        zero_edges(data, n);
    }
    finish(deps, n, count);
    return cudaSuccess;
}

API cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t nd, cudaGraphNode_t *out,
                                               cudaGraphEdgeData *data, size_t *count)
{
    if (!nd || !count || (data && !out))
        return rt_set(cudaErrorInvalidValue);
    struct CUgraph_st *g = nd->graph;
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++)
            if (g->nodes[i]->deps[d] == nd) {
                if (out && k < *count)
                    out[k] = g->nodes[i];
                k++;
            }
    if (out)
        zero_edges(data, k < *count ? k : *count);
    finish(out, k, count);
    return cudaSuccess;
}

static cudaError_t edges_valid(cudaGraph_t g, const cudaGraphNode_t *from,
                               const cudaGraphNode_t *to, const cudaGraphEdgeData *data,
                               size_t n)
{
    static const cudaGraphEdgeData plain;
    if (!g || (n && (!from || !to)))
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < n; i++) {
        if (!from[i] || !to[i] || from[i]->graph != g || to[i]->graph != g || from[i] == to[i])
            return cudaErrorInvalidValue;
        if (data && memcmp(&data[i], &plain, sizeof plain))
            return cudaErrorNotSupported; /* ports and programmatic edges */
    }
    return cudaSuccess;
}

/* All or nothing: every edge is checked (new, distinct) before any is added. */
API cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from,
                                         const cudaGraphNode_t *to,
                                         const cudaGraphEdgeData *data, size_t n)
{
    cudaError_t e = edges_valid(g, from, to, data, n);
    for (size_t i = 0; !e && i < n; i++) {
        for (size_t k = 0; k < to[i]->ndeps && !e; k++)
            e = to[i]->deps[k] == from[i] ? cudaErrorInvalidValue : e;
        for (size_t j = 0; j < i && !e; j++)
            e = from[j] == from[i] && to[j] == to[i] ? cudaErrorInvalidValue : e;
    }
    for (size_t i = 0; !e && i < n; i++) {
        struct CUgraphNode_st *t = to[i];
        struct CUgraphNode_st **p = realloc(t->deps, (t->ndeps + 1) * sizeof *p);
        if (!p)
            return rt_set(cudaErrorMemoryAllocation);
        t->deps = p;
        t->deps[t->ndeps++] = from[i];
    }
    return rt_set(e);
}

static int drop_dep(struct CUgraphNode_st *nd, const struct CUgraphNode_st *d)
{
    for (size_t k = 0; k < nd->ndeps; k++)
        if (nd->deps[k] == d) {
            memmove(&nd->deps[k], &nd->deps[k + 1], (nd->ndeps - k - 1) * sizeof *nd->deps);
            nd->ndeps--;
            return 1;
        }
    return 0;
}

API cudaError_t cudaGraphRemoveDependencies(cudaGraph_t g, const cudaGraphNode_t *from,
                                            const cudaGraphNode_t *to,
                                            const cudaGraphEdgeData *data, size_t n)
{
    cudaError_t e = edges_valid(g, from, to, data, n);
    for (size_t i = 0; !e && i < n; i++) { /* every edge must exist */
        int found = 0;
        for (size_t k = 0; k < to[i]->ndeps; k++)
            found |= to[i]->deps[k] == from[i];
        e = found ? e : cudaErrorInvalidValue;
    }
    for (size_t i = 0; !e && i < n; i++)
        drop_dep(to[i], from[i]);
    return rt_set(e);
}

/* The node goes, with every edge into or out of it. */
API cudaError_t cudaGraphDestroyNode(cudaGraphNode_t nd)
{
    if (!nd)
        return rt_set(cudaErrorInvalidValue);
    struct CUgraph_st *g = nd->graph;
    size_t at = g->n;
    for (size_t i = 0; i < g->n; i++) {
        while (drop_dep(g->nodes[i], nd))
            ;
        at = g->nodes[i] == nd ? i : at;
    }
    if (at < g->n)
        memmove(&g->nodes[at], &g->nodes[at + 1], (g->n - at - 1) * sizeof *g->nodes);
    g->n--;
    rt_op_free(&nd->op);
    free(nd->deps);
    free(nd);
    return cudaSuccess;
}
