/* cudaGraphDebugDotPrint: a graph as Graphviz DOT, one cluster per graph (child graphs
 * nested), a node per node labelled with its type and what it does, an edge per dependency.
 * The flags only add detail in CUDA; every node here carries its essentials. */
#include <stdio.h>

#include "graph.h"

static const char *type_name(enum cudaGraphNodeType t)
{
    switch (t) {
    case cudaGraphNodeTypeKernel: return "KERNEL";
    case cudaGraphNodeTypeMemcpy: return "MEMCPY";
    case cudaGraphNodeTypeMemset: return "MEMSET";
    case cudaGraphNodeTypeHost: return "HOST";
    case cudaGraphNodeTypeGraph: return "GRAPH";
    case cudaGraphNodeTypeWaitEvent: return "WAIT_EVENT";
    case cudaGraphNodeTypeEventRecord: return "EVENT_RECORD";
    case cudaGraphNodeTypeMemAlloc: return "MEM_ALLOC";
    case cudaGraphNodeTypeMemFree: return "MEM_FREE";
    case cudaGraphNodeTypeConditional: return "CONDITIONAL";
    default: return "EMPTY";
    }
}

static void detail(FILE *f, const struct op *op)
{
    const char *name = NULL;
    switch (op->type) {
    case cudaGraphNodeTypeKernel:
        cudaFuncGetName(&name, op->u.k.func);
        fprintf(f, "\\n%s\\n<<<(%u,%u,%u),(%u,%u,%u),%u>>>", name ? name : "?", op->u.k.grid.x,
                op->u.k.grid.y, op->u.k.grid.z, op->u.k.block.x, op->u.k.block.y,
                op->u.k.block.z, op->u.k.shared);
        break;
    case cudaGraphNodeTypeMemcpy:
        fprintf(f, "\\n%zu x %zu x %zu bytes", op->u.copy.extent.width, op->u.copy.extent.height,
                op->u.copy.extent.depth);
        break;
    case cudaGraphNodeTypeMemset:
        fprintf(f, "\\nvalue %u, %zu x %zu x %u bytes", op->u.set.value, op->u.set.width,
                op->u.set.height, op->u.set.elementSize);
        break;
    case cudaGraphNodeTypeMemAlloc:
        fprintf(f, "\\n%zu bytes", op->u.alloc.params.bytesize);
        break;
    default: break;
    }
}

/* Graph number `id`, its children numbered after it from *next. */
static void print_graph(FILE *f, const struct CUgraph_st *g, int id, int *next)
{
    fprintf(f, "subgraph cluster_%d {\nlabel=\"graph_%d\";\n", id, id);
    rt_graph_number(g);
    for (size_t i = 0; i < g->n; i++) {
        const struct op *op = &g->nodes[i]->op;
        fprintf(f, "\"graph_%d_node_%zu\" [shape=box, label=\"%s", id, i, type_name(op->type));
        detail(f, op);
        fprintf(f, "\"];\n");
        if (op->type == cudaGraphNodeTypeGraph) {
            int child = (*next)++;
            print_graph(f, op->u.child, child, next);
            if (op->u.child->n)
                fprintf(f, "\"graph_%d_node_%zu\" -> \"graph_%d_node_0\" [style=dashed];\n",
                        id, i, child);
        }
    }
    for (size_t i = 0; i < g->n; i++)
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++)
            fprintf(f, "\"graph_%d_node_%zu\" -> \"graph_%d_node_%zu\";\n", id,
                    g->nodes[i]->deps[d]->index, id, i);
    fprintf(f, "}\n");
}

API cudaError_t cudaGraphDebugDotPrint(cudaGraph_t g, const char *path, unsigned int flags)
{
    (void)flags;
    int next = 2;
    if (!g || !path)
        return rt_set(cudaErrorInvalidValue);
    FILE *f = fopen(path, "w");
    if (!f)
        return rt_set(cudaErrorOperatingSystem);
    fprintf(f, "digraph dot {\n");
    print_graph(f, g, 1, &next);
    fprintf(f, "}\n");
    return fclose(f) ? rt_set(cudaErrorOperatingSystem) : cudaSuccess;
}
