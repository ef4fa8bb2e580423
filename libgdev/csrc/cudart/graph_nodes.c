/* CUDA graphs: adding each kind of node, and reading and changing a node's parameters.
 * A kernel node copies its arguments when added or set (their sizes from
 * cuFuncGetParamInfo), as CUDA does; a child-graph node holds a clone of the graph given.
 * Copies and memsets read and write their memory when the graph runs. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* The arguments as kernelParams (one pointer per parameter) or as `extra`'s packed buffer. */
static const void *arg_at(const struct cudaKernelNodeParams *p, size_t off, size_t size, int i)
{
    if (p->kernelParams)
        return p->kernelParams[i];
    void *buf = NULL;
    size_t len = 0;
    for (void **x = p->extra; x && *x != CU_LAUNCH_PARAM_END; x += 2)
        if (*x == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = x[1];
        else if (*x == CU_LAUNCH_PARAM_BUFFER_SIZE)
            len = *(size_t *)x[1];
    return buf && off + size <= len ? (uint8_t *)buf + off : NULL;
}

cudaError_t rt_kernel_op(struct kernel_op *k, const struct cudaKernelNodeParams *p)
{
    CUfunction fn;
    size_t off, size, total = 0;
    cudaError_t e = rt_function(p->func, &fn);
    if (e)
        return e;
    if (!p->gridDim.x || !p->gridDim.y || !p->gridDim.z || !p->blockDim.x || !p->blockDim.y
        || !p->blockDim.z || (uint64_t)p->blockDim.x * p->blockDim.y * p->blockDim.z > 1024)
        return cudaErrorInvalidConfiguration;
    *k = (struct kernel_op){.func = rt_host_stub(p->func), .grid = p->gridDim, .block = p->blockDim,
                            .shared = p->sharedMemBytes};
    while (cuFuncGetParamInfo(fn, (size_t)k->nargs, &off, &size) == CUDA_SUCCESS) {
        total = off + size > total ? off + size : total;
        k->nargs++;
    }
    if (k->nargs && !p->kernelParams && !p->extra)
        return cudaErrorInvalidValue;
    k->len = total;
    k->args = calloc(1, total ? total : 1);
    k->argv = calloc((size_t)k->nargs + 1, sizeof *k->argv);
    for (int i = 0; k->args && k->argv && i < k->nargs; i++) {
        cuFuncGetParamInfo(fn, (size_t)i, &off, &size);
        const void *v = arg_at(p, off, size, i);
        if (!v)
            e = cudaErrorInvalidValue;
        else
            memcpy(k->args + off, v, size);
        k->argv[i] = k->args + off;
    }
    if (!k->args || !k->argv || e) {
        free(k->args);
        free(k->argv);
        return e ? e : cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t rt_memset_valid(const struct cudaMemsetParams *p)
{
    if (!p || !p->dst || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return cudaErrorInvalidValue;
    if (p->height > 1 && p->pitch < p->width * p->elementSize)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t rt_copy_valid(const struct cudaMemcpy3DParms *p)
{
    if (!p)
        return cudaErrorInvalidValue;
    if (p->srcArray || p->dstArray)
        return cudaErrorNotSupported; /* as cudaMemcpy3D: linear memory only */
    if (!p->srcPtr.ptr || !p->dstPtr.ptr || !p->extent.width || !p->extent.height
        || !p->extent.depth)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* Add a node of *op after deps (checked first, as every Add*Node call does). */
static cudaError_t add(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                       size_t n, struct op *op)
{
    if (!out || !g || (n && !deps)) {
        rt_op_free(op);
        return rt_set(cudaErrorInvalidValue);
    }
    return rt_set(rt_graph_add(g, op, deps, n, out));
}

API cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *out, cudaGraph_t g,
                                       const cudaGraphNode_t *deps, size_t n,
                                       const struct cudaKernelNodeParams *p)
{
    struct op op = {.type = cudaGraphNodeTypeKernel};
    cudaError_t e = p ? rt_kernel_op(&op.u.k, p) : cudaErrorInvalidValue;
    return e ? rt_set(e) : add(out, g, deps, n, &op);
}

API cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *out, cudaGraph_t g,
                                       const cudaGraphNode_t *deps, size_t n,
                                       const struct cudaMemcpy3DParms *p)
{
    cudaError_t e = rt_copy_valid(p);
    struct op op = {.type = cudaGraphNodeTypeMemcpy};
    if (e)
        return rt_set(e);
    op.u.copy = *p;
    return add(out, g, deps, n, &op);
}

/* A 1D copy is a 3D one of one row (what cudaGraphMemcpyNodeGetParams reports, as in CUDA). */
static struct cudaMemcpy3DParms one_row(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind)
{
    return (struct cudaMemcpy3DParms){
        .srcPtr = {.ptr = (void *)src, .pitch = count, .xsize = count, .ysize = 1},
        .dstPtr = {.ptr = dst, .pitch = count, .xsize = count, .ysize = 1},
        .extent = {.width = count, .height = 1, .depth = 1}, .kind = kind};
}

API cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *out, cudaGraph_t g,
                                         const cudaGraphNode_t *deps, size_t n, void *dst,
                                         const void *src, size_t count,
                                         enum cudaMemcpyKind kind)
{
    struct cudaMemcpy3DParms p = one_row(dst, src, count, kind);
    return cudaGraphAddMemcpyNode(out, g, deps, n, &p);
}

API cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *out, cudaGraph_t g,
                                       const cudaGraphNode_t *deps, size_t n,
                                       const struct cudaMemsetParams *p)
{
    struct op op = {.type = cudaGraphNodeTypeMemset};
    cudaError_t e = rt_memset_valid(p);
    if (e)
        return rt_set(e);
    op.u.set = *p;
    return add(out, g, deps, n, &op);
}

API cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *out, cudaGraph_t g,
                                     const cudaGraphNode_t *deps, size_t n,
                                     const struct cudaHostNodeParams *p)
{
    struct op op = {.type = cudaGraphNodeTypeHost};
    if (!p || !p->fn)
        return rt_set(cudaErrorInvalidValue);
    op.u.host = *p;
    return add(out, g, deps, n, &op);
}

API cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *out, cudaGraph_t g,
                                           const cudaGraphNode_t *deps, size_t n,
                                           cudaGraph_t child)
{
    struct op op = {.type = cudaGraphNodeTypeGraph};
    if (!child || child == g)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_graph_clone(&op.u.child, child);
    return e ? rt_set(e) : add(out, g, deps, n, &op);
}

API cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *out, cudaGraph_t g,
                                      const cudaGraphNode_t *deps, size_t n)
{
    struct op op = {.type = cudaGraphNodeTypeEmpty};
    return add(out, g, deps, n, &op);
}

static cudaError_t add_event(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                             size_t n, cudaEvent_t ev, enum cudaGraphNodeType type)
{
    struct op op = {.type = type, .u.event = ev};
    return ev ? add(out, g, deps, n, &op) : rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *out, cudaGraph_t g,
                                            const cudaGraphNode_t *deps, size_t n,
                                            cudaEvent_t ev)
{
    return add_event(out, g, deps, n, ev, cudaGraphNodeTypeEventRecord);
}

API cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *out, cudaGraph_t g,
                                          const cudaGraphNode_t *deps, size_t n,
                                          cudaEvent_t ev)
{
    return add_event(out, g, deps, n, ev, cudaGraphNodeTypeWaitEvent);
}

/* The node if it is of the type wanted; NULL (and the error recorded) otherwise. */
static struct CUgraphNode_st *of_type(cudaGraphNode_t nd, enum cudaGraphNodeType t,
                                      const void *params)
{
    if (nd && params && nd->op.type == t)
        return nd;
    rt_set(cudaErrorInvalidValue);
    return NULL;
}

#define GET(nd, type, out, member)                 \
    do {                                           \
        if (!of_type(nd, type, out))               \
            return cudaErrorInvalidValue;          \
        *(out) = (nd)->op.u.member;                \
        return cudaSuccess;                        \
    } while (0)

API cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t nd, struct cudaKernelNodeParams *p)
{
    if (!of_type(nd, cudaGraphNodeTypeKernel, p))
        return cudaErrorInvalidValue;
    const struct kernel_op *k = &nd->op.u.k;
    *p = (struct cudaKernelNodeParams){.func = (void *)k->func, .gridDim = k->grid,
                                       .blockDim = k->block, .sharedMemBytes = k->shared,
                                       .kernelParams = k->argv};
    return cudaSuccess;
}

API cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t nd,
                                             const struct cudaKernelNodeParams *p)
{
    struct op op = {.type = cudaGraphNodeTypeKernel};
    if (!of_type(nd, cudaGraphNodeTypeKernel, p))
        return cudaErrorInvalidValue;
    cudaError_t e = rt_kernel_op(&op.u.k, p);
    if (e)
        return rt_set(e);
    rt_kattrs_move(&op.u.k, &nd->op.u.k);
    rt_op_free(&nd->op);
    nd->op = op;
    return cudaSuccess;
}

API cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t nd, struct cudaMemcpy3DParms *p)
{
    GET(nd, cudaGraphNodeTypeMemcpy, p, copy);
}

API cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t nd,
                                             const struct cudaMemcpy3DParms *p)
{
    cudaError_t e = rt_copy_valid(p);
    if (!of_type(nd, cudaGraphNodeTypeMemcpy, p))
        return cudaErrorInvalidValue;
    if (e)
        return rt_set(e);
    nd->op.u.copy = *p;
    return cudaSuccess;
}

API cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t nd, void *dst, const void *src,
                                               size_t count, enum cudaMemcpyKind kind)
{
    struct cudaMemcpy3DParms p = one_row(dst, src, count, kind);
    return cudaGraphMemcpyNodeSetParams(nd, &p);
}

API cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t nd, struct cudaMemsetParams *p)
{
    GET(nd, cudaGraphNodeTypeMemset, p, set);
}

API cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t nd, const struct cudaMemsetParams *p)
{
    if (!of_type(nd, cudaGraphNodeTypeMemset, p))
        return cudaErrorInvalidValue;
    if (rt_memset_valid(p))
        return rt_set(cudaErrorInvalidValue);
    nd->op.u.set = *p;
    return cudaSuccess;
}

API cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t nd, struct cudaHostNodeParams *p)
{
    GET(nd, cudaGraphNodeTypeHost, p, host);
}

API cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t nd, const struct cudaHostNodeParams *p)
{
    if (!of_type(nd, cudaGraphNodeTypeHost, p) || !p->fn)
        return rt_set(cudaErrorInvalidValue);
    nd->op.u.host = *p;
    return cudaSuccess;
}

API cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t nd, cudaGraph_t *g)
{
    GET(nd, cudaGraphNodeTypeGraph, g, child);
}

API cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t nd, cudaEvent_t *ev)
{
    GET(nd, cudaGraphNodeTypeEventRecord, ev, event);
}

API cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t nd, cudaEvent_t *ev)
{
    GET(nd, cudaGraphNodeTypeWaitEvent, ev, event);
}

API cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t nd, cudaEvent_t ev)
{
    if (!of_type(nd, cudaGraphNodeTypeEventRecord, ev))
        return cudaErrorInvalidValue;
    nd->op.u.event = ev;
    return cudaSuccess;
}

API cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t nd, cudaEvent_t ev)
{
    if (!of_type(nd, cudaGraphNodeTypeWaitEvent, ev))
        return cudaErrorInvalidValue;
    nd->op.u.event = ev;
    return cudaSuccess;
}
