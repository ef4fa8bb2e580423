/* CUDA graphs inside libcudart (graph.c, graph_nodes.c, graph_exec.c, capture.c).
 *
 * Theory of operation.  A graph is a DAG: each node holds its operation (a kernel with its
 * arguments copied when added, a 3D copy, a memset, a host call, an embedded child graph, an
 * event record or wait, or nothing) and its in-edges (`deps`, the nodes it waits for).  Nodes
 * are kept in creation order; that order names them for cudaGraphExecUpdate's pairing and
 * breaks ties in the topological order, so two graphs of one topology instantiate alike.
 * Instantiation copies the operations in a topological order (a cycle is refused), child
 * graphs inlined; a launch issues them in that order in the launch's stream, which is a valid
 * schedule of the DAG and keeps the graph stream-ordered with everything else in that stream.
 * Graphs are not internally synchronized (as in CUDA): one thread builds a graph at a time.
 * Stream capture (capture.c) adds nodes to the same DAG, each depending on its stream's
 * current frontier. */
#ifndef CUDART_GRAPH_H
#define CUDART_GRAPH_H

#include <stdint.h>

#include "cudart_internal.h"

/* A launch attribute set on a kernel node (graph_kattr.c). */
struct kattr {
    cudaLaunchAttributeID id;
    cudaLaunchAttributeValue val;
};

/* A kernel and its arguments: argv[i] points into args (owned by the node), and the launch
 * attributes set on its node (owned too; kept when the node gets new parameters). */
struct kernel_op {
    const void *func;
    dim3 grid, block;
    unsigned shared;
    int nargs;
    void **argv;
    uint8_t *args;
    size_t len;
    struct kattr *attrs;
    int nattrs;
};

/* Move the attributes of `from` to `to`, which had none (a kernel node's new parameters). */
static inline void rt_kattrs_move(struct kernel_op *to, struct kernel_op *from)
{
    to->attrs = from->attrs;
    to->nattrs = from->nattrs;
    from->attrs = NULL;
    from->nattrs = 0;
}

struct gmem; /* a graph allocation (graph_mem.c) */

/* A conditional node (graph_cond.c): its handle (a device word) and its owned bodies. */
struct cond_op {
    unsigned long long handle;
    enum cudaGraphConditionalNodeType type;
    unsigned size;
    struct CUgraph_st **bodies;
};

/* The operation of a node; `type` says which member is live. */
struct op {
    enum cudaGraphNodeType type;
    union {
        struct kernel_op k;
        struct cudaMemcpy3DParms copy;
        struct cudaMemsetParams set;
        struct cudaHostNodeParams host;
        struct CUgraph_st *child; /* owned: a clone of the graph given */
        cudaEvent_t event;
        struct {
            struct cudaMemAllocNodeParams params;
            struct gmem *mem; /* one reference per op */
        } alloc;
        void *freed; /* a memory-free node's graph allocation */
        struct cond_op cond;
    } u;
};

struct CUgraphNode_st {
    struct CUgraph_st *graph;
    struct CUgraphNode_st *origin; /* the node this one was cloned from, if any */
    struct op op;
    struct CUgraphNode_st **deps; /* in-edges: distinct nodes of the same graph */
    size_t ndeps;
    size_t index; /* scratch: position in graph->nodes during a traversal */
};

/* References a graph holds on a user object (graph_userobj.c). */
struct graph_ref {
    cudaUserObject_t obj;
    unsigned count;
};

struct CUgraph_st {
    struct CUgraphNode_st **nodes; /* creation order */
    size_t n, cap;
    struct graph_ref *refs; /* released when the graph goes; a clone retains its own */
    size_t nrefs;
    unsigned long long id; /* unique per graph created; a clone keeps its original's: the
                            * graph whose conditional handles apply to it */
};

/* One operation of an executable graph; key is the graph node it came from (for the
 * cudaGraphExec*SetParams calls), and stays so across cudaGraphExecUpdate. */
struct xnode {
    const struct CUgraphNode_st *key;
    struct op op;
    int disabled;
};

struct CUgraphExec_st {
    struct xnode *v; /* issue order */
    size_t n, cap;
    struct CUgraph_st *src; /* a clone of the graph instantiated: its topology */
    unsigned long long flags;
};

/* graph.c */
cudaError_t rt_op_copy(struct op *to, const struct op *from); /* deep: args, child graph */
void rt_op_free(struct op *op);
cudaError_t rt_graph_new(struct CUgraph_st **g);
void rt_graph_free(struct CUgraph_st *g);
cudaError_t rt_graph_clone(struct CUgraph_st **out, const struct CUgraph_st *g);
/* Add a node owning *op (freed on failure) after deps[0..n); *out is the new node. */
cudaError_t rt_graph_add(struct CUgraph_st *g, struct op *op, const cudaGraphNode_t *deps,
                         size_t n, cudaGraphNode_t *out);
void rt_graph_number(const struct CUgraph_st *g); /* each node's index = its position */

/* graph_nodes.c: a kernel operation from CUDA's parameters (arguments copied) */
cudaError_t rt_kernel_op(struct kernel_op *k, const struct cudaKernelNodeParams *p);
cudaError_t rt_memset_valid(const struct cudaMemsetParams *p);
cudaError_t rt_copy_valid(const struct cudaMemcpy3DParms *p); /* linear memory, nonempty */

/* graph_mem.c: graph allocations, counted by the ops that hold them */
cudaError_t rt_alloc_op(struct op *op, struct cudaMemAllocNodeParams *p); /* sets p->dptr */
void rt_gmem_ref(struct gmem *m);
void rt_gmem_unref(struct gmem *m);

/* graph_exec.c: issue one operation in stream s */
cudaError_t rt_op_issue(const struct op *op, cudaStream_t s);

/* graph_kattr.c: kernel nodes' launch attributes */
cudaError_t rt_kattrs_copy(struct kernel_op *to, const struct kernel_op *from); /* deep */
const cudaLaunchAttributeValue *rt_kattr(const struct kernel_op *k, cudaLaunchAttributeID id);

/* graph_userobj.c: the user-object references of graphs */
cudaError_t rt_refs_copy(struct CUgraph_st *to, const struct CUgraph_st *from);
void rt_refs_free(struct CUgraph_st *g);

/* graph_cond.c: conditional nodes */
cudaError_t rt_cond_op(struct op *op, struct cudaConditionalNodeParams *p,
                       const struct CUgraph_st *g); /* sets p->phGraph_out */
cudaError_t rt_cond_copy(struct cond_op *to, const struct cond_op *from); /* deep */
void rt_cond_free(struct cond_op *c);
cudaError_t rt_cond_issue(const struct cond_op *c, cudaStream_t s); /* decide, issue body */
cudaError_t rt_cond_reset(const struct CUgraph_st *g, cudaStream_t s); /* default values */

#endif /* CUDART_GRAPH_H */
