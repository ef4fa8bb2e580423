/* CUDA graphs: the DAG itself (graph.h says how the pieces fit): creating, cloning and
 * destroying graphs and nodes, edges, and the queries over them. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "graph.h"

cudaError_t rt_op_copy(struct op *to, const struct op *from)
{
    *to = *from;
    if (from->type == cudaGraphNodeTypeMemAlloc)
        rt_gmem_ref(from->u.alloc.mem);
    if (from->type == cudaGraphNodeTypeGraph)
        return rt_graph_clone(&to->u.child, from->u.child);
    if (from->type == cudaGraphNodeTypeConditional)
        return rt_cond_copy(&to->u.cond, &from->u.cond);
    if (from->type != cudaGraphNodeTypeKernel)
        return cudaSuccess;
    const struct kernel_op *a = &from->u.k;
    struct kernel_op *b = &to->u.k;
    b->args = malloc(a->len ? a->len : 1);
    b->argv = calloc((size_t)a->nargs + 1, sizeof *b->argv);
    if (!b->args || !b->argv || rt_kattrs_copy(b, a)) {
        free(b->args);
        free(b->argv);
        return cudaErrorMemoryAllocation;
    }
    memcpy(b->args, a->args, a->len);
    for (int i = 0; i < a->nargs; i++)
        b->argv[i] = b->args + ((uint8_t *)a->argv[i] - a->args);
    return cudaSuccess;
}

void rt_op_free(struct op *op)
{
    if (op->type == cudaGraphNodeTypeKernel) {
        free(op->u.k.args);
        free(op->u.k.argv);
        free(op->u.k.attrs);
    } else if (op->type == cudaGraphNodeTypeGraph) {
        rt_graph_free(op->u.child);
    } else if (op->type == cudaGraphNodeTypeMemAlloc) {
        rt_gmem_unref(op->u.alloc.mem);
    } else if (op->type == cudaGraphNodeTypeConditional) {
        rt_cond_free(&op->u.cond);
    }
    op->type = cudaGraphNodeTypeEmpty;
}

cudaError_t rt_graph_new(struct CUgraph_st **g)
{
    static unsigned long long ids;
    *g = calloc(1, sizeof **g);
    if (!*g)
        return cudaErrorMemoryAllocation;
    (*g)->id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

static void node_free(struct CUgraphNode_st *nd)
{
    rt_op_free(&nd->op);
    free(nd->deps);
    free(nd);
}

void rt_graph_free(struct CUgraph_st *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    rt_refs_free(g);
    free(g);
}

void rt_graph_number(const struct CUgraph_st *g)
{
    for (size_t i = 0; i < g->n; i++)
        g->nodes[i]->index = i;
}

static int has_dep(const struct CUgraphNode_st *nd, const struct CUgraphNode_st *d)
{
    for (size_t i = 0; i < nd->ndeps; i++)
        if (nd->deps[i] == d)
            return 1;
    return 0;
}

cudaError_t rt_graph_add(struct CUgraph_st *g, struct op *op, const cudaGraphNode_t *deps,
                         size_t n, cudaGraphNode_t *out)
{
    cudaError_t e = cudaErrorInvalidValue;
    struct CUgraphNode_st *nd = calloc(1, sizeof *nd);
    if (!nd) {
        rt_op_free(op);
        return cudaErrorMemoryAllocation;
    }
    nd->op = *op;
    op->type = cudaGraphNodeTypeEmpty; /* owned by nd from here */
    if (n && !(nd->deps = calloc(n, sizeof *nd->deps))) {
        e = cudaErrorMemoryAllocation;
        goto free_node;
    }
    for (size_t i = 0; i < n; i++) {   /* dependencies: distinct nodes of this graph */
        if (!deps[i] || deps[i]->graph != g || has_dep(nd, deps[i]))
            goto free_node;
        nd->deps[nd->ndeps++] = deps[i];
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct CUgraphNode_st **p = realloc(g->nodes, cap * sizeof *p);
        if (!p) {
            e = cudaErrorMemoryAllocation;
            goto free_node;
        }
        g->nodes = p;
        g->cap = cap;
    }
    nd->graph = g;
    g->nodes[g->n++] = nd;
    *out = nd;
    return cudaSuccess;
free_node:
    rt_op_free(&nd->op);
    free(nd->deps);
    free(nd);
    return e;
}

/* Copy nd's in-edges to its clone in c (nodes of c at the originals' indices). */
static cudaError_t clone_deps(struct CUgraph_st *c, const struct CUgraphNode_st *nd)
{
    struct CUgraphNode_st *to = c->nodes[nd->index];
    if (!nd->ndeps)
        return cudaSuccess;
    if (!(to->deps = calloc(nd->ndeps, sizeof *to->deps)))
        return cudaErrorMemoryAllocation;
    for (size_t k = 0; k < nd->ndeps; k++)
        to->deps[k] = c->nodes[nd->deps[k]->index];
    to->ndeps = nd->ndeps;
    return cudaSuccess;
}

/* Two passes: every node first, then the edges (an edge may point to a later node). */
cudaError_t rt_graph_clone(struct CUgraph_st **out, const struct CUgraph_st *g)
{
    struct CUgraph_st *c;
    cudaGraphNode_t nd;
    struct op op;
    cudaError_t e = rt_graph_new(&c);
    if (!e) {
        c->id = g->id;
        e = rt_refs_copy(c, g);
    }
    rt_graph_number(g);
    for (size_t i = 0; !e && i < g->n; i++)
        if (!(e = rt_op_copy(&op, &g->nodes[i]->op)) && !(e = rt_graph_add(c, &op, NULL, 0, &nd)))
            nd->origin = g->nodes[i];
    for (size_t i = 0; !e && i < g->n; i++)
        e = clone_deps(c, g->nodes[i]);
    if (e) {
        rt_graph_free(c);
        return e;
    }
    *out = c;
    return cudaSuccess;
}
