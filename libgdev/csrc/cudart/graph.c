/* CUDA graphs by stream capture: between cudaStreamBeginCapture and cudaStreamEndCapture,
 * kernel launches, cudaMemcpyAsync, cudaMemsetAsync and cudaEventRecord issued in a stream
 * (not the legacy NULL stream, where CUDA refuses capture) are recorded as the nodes of a
 * graph instead of running; each cudaGraphLaunch of its instantiation issues them again, in
 * order, in the launch's stream.  A kernel's arguments are copied when captured (their sizes
 * from cuFuncGetParamInfo); copies and memsets read and write their memory when the graph
 * runs, as CUDA's nodes do.  Synchronizing a capturing stream is an error that invalidates the
 * capture (cudaErrorStreamCaptureUnsupported, then cudaErrorStreamCaptureInvalidated).
 * Explicit graph construction (cudaGraphAdd*Node) is not provided. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

enum { N_KERNEL, N_COPY, N_SET, N_EVENT };

struct node {
    int kind;
    const void *func; /* N_KERNEL */
    dim3 grid, block;
    size_t shared;
    int nargs;
    void **argv;  /* argv[i] points into args */
    uint8_t *args;
    size_t args_len;
    void *dst; /* N_COPY, N_SET */
    const void *src;
    size_t n;
    enum cudaMemcpyKind copy_kind;
    int value;
    cudaEvent_t event; /* N_EVENT */
};

struct CUgraph_st {
    struct node *nodes;
    size_t n, cap;
};

struct CUgraphExec_st {
    struct CUgraph_st g;
};

#define MAX_CAPTURES 64
static struct capture {
    cudaStream_t stream;
    struct CUgraph_st *graph;
    int invalid;
} captures[MAX_CAPTURES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct capture *find(cudaStream_t s)
{
    for (int i = 0; i < MAX_CAPTURES; i++)
        if (captures[i].graph && captures[i].stream == s)
            return &captures[i];
    return NULL;
}

static void free_nodes(struct CUgraph_st *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->nodes[i].argv);
        free(g->nodes[i].args);
    }
    free(g->nodes);
    g->nodes = NULL;
    g->n = g->cap = 0;
}

/* Append a copy of *nd to g (taking ownership of its argument buffers). */
static cudaError_t append(struct CUgraph_st *g, const struct node *nd)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        struct node *p = realloc(g->nodes, cap * sizeof *p);
        if (!p)
            return cudaErrorMemoryAllocation;
        g->nodes = p;
        g->cap = cap;
    }
    g->nodes[g->n++] = *nd;
    return cudaSuccess;
}

int rt_capturing(cudaStream_t s)
{
    pthread_mutex_lock(&lock);
    int yes = s && find(s) != NULL;
    pthread_mutex_unlock(&lock);
    return yes;
}

/* Record *nd in s's capture (its buffers freed if that fails). */
static cudaError_t record(cudaStream_t s, struct node *nd)
{
    cudaError_t e = cudaErrorStreamCaptureImplicit;
    pthread_mutex_lock(&lock);
    struct capture *c = find(s);
    if (c)
        e = c->invalid ? cudaErrorStreamCaptureInvalidated : append(c->graph, nd);
    pthread_mutex_unlock(&lock);
    if (e) {
        free(nd->argv);
        free(nd->args);
    }
    return e;
}

cudaError_t rt_capture_kernel(cudaStream_t s, const void *func, dim3 grid, dim3 block,
                              void **args, size_t shared)
{
    CUfunction fn;
    size_t off, size, total = 0;
    struct node nd = {.kind = N_KERNEL, .func = func, .grid = grid, .block = block,
                      .shared = shared};
    cudaError_t e = rt_function(func, &fn);
    if (e)
        return e;
    while (cuFuncGetParamInfo(fn, (size_t)nd.nargs, &off, &size) == CUDA_SUCCESS) {
        total = off + size > total ? off + size : total;
        nd.nargs++;
    }
    nd.args_len = total;
    nd.args = malloc(total ? total : 1);
    nd.argv = calloc((size_t)nd.nargs + 1, sizeof *nd.argv);
    if (!nd.args || !nd.argv) {
        free(nd.args);
        free(nd.argv);
        return cudaErrorMemoryAllocation;
    }
    for (int i = 0; i < nd.nargs; i++) {
        cuFuncGetParamInfo(fn, (size_t)i, &off, &size);
        memcpy(nd.args + off, args[i], size);
        nd.argv[i] = nd.args + off;
    }
    return record(s, &nd);
}

cudaError_t rt_capture_copy(cudaStream_t s, void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind)
{
    struct node nd = {.kind = N_COPY, .dst = dst, .src = src, .n = n, .copy_kind = kind};
    return record(s, &nd);
}

cudaError_t rt_capture_memset(cudaStream_t s, void *p, int value, size_t n)
{
    struct node nd = {.kind = N_SET, .dst = p, .value = value, .n = n};
    return record(s, &nd);
}

cudaError_t rt_capture_event(cudaStream_t s, cudaEvent_t e)
{
    struct node nd = {.kind = N_EVENT, .event = e};
    return record(s, &nd);
}

/* A synchronization of a capturing stream: refused, and the capture is invalidated. */
cudaError_t rt_capture_sync(cudaStream_t s)
{
    pthread_mutex_lock(&lock);
    struct capture *c = s ? find(s) : NULL;
    if (c)
        c->invalid = 1;
    pthread_mutex_unlock(&lock);
    return c ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode; /* global, thread-local and relaxed alike: only this stream is captured */
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread)
        return rt_set(cudaErrorStreamCaptureUnsupported);
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g)
        return rt_set(cudaErrorMemoryAllocation);
    cudaError_t e = cudaErrorInvalidValue; /* too many captures at once */
    pthread_mutex_lock(&lock);
    if (find(s))
        e = cudaErrorIllegalState;
    else
        for (int i = 0; i < MAX_CAPTURES && e; i++)
            if (!captures[i].graph) {
                captures[i] = (struct capture){s, g, 0};
                e = cudaSuccess;
            }
    pthread_mutex_unlock(&lock);
    if (e)
        free(g);
    return rt_set(e);
}

API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    if (!graph)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    struct capture *c = s ? find(s) : NULL;
    struct CUgraph_st *g = c ? c->graph : NULL;
    int invalid = c ? c->invalid : 0;
    if (c)
        *c = (struct capture){0};
    pthread_mutex_unlock(&lock);
    if (!g)
        return rt_set(cudaErrorIllegalState);
    if (invalid) {
        free_nodes(g);
        free(g);
        *graph = NULL;
        return rt_set(cudaErrorStreamCaptureInvalidated);
    }
    *graph = g;
    return cudaSuccess;
}

API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    if (!status)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    struct capture *c = s ? find(s) : NULL;
    *status = !c ? cudaStreamCaptureStatusNone
                 : c->invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *count)
{
    if (!g || !count)
        return rt_set(cudaErrorInvalidValue);
    if (nodes)
        for (size_t i = 0; i < *count && i < g->n; i++)
            nodes[i] = (cudaGraphNode_t)(void *)&g->nodes[i];
    *count = g->n;
    return cudaSuccess;
}

API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
                                     unsigned long long flags)
{
    (void)flags;
    if (!exec || !g)
        return rt_set(cudaErrorInvalidValue);
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    for (size_t i = 0; x && i < g->n; i++) {
        const struct node *from = &g->nodes[i];
        struct node nd = *from;
        int ok = 1;
        if (nd.kind == N_KERNEL) { /* its own copy of the arguments */
            nd.args = malloc(nd.args_len ? nd.args_len : 1);
            nd.argv = calloc((size_t)nd.nargs + 1, sizeof *nd.argv);
            ok = nd.args && nd.argv;
            for (int k = 0; ok && k < nd.nargs; k++)
                nd.argv[k] = nd.args + ((uint8_t *)from->argv[k] - from->args);
            if (ok)
                memcpy(nd.args, from->args, nd.args_len);
        }
        if (!ok || append(&x->g, &nd)) {
            if (nd.kind == N_KERNEL) {
                free(nd.args);
                free(nd.argv);
            }
            free_nodes(&x->g);
            free(x);
            x = NULL;
        }
    }
    if (!x)
        return rt_set(cudaErrorMemoryAllocation);
    *exec = x;
    return cudaSuccess;
}

API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t g,
                                              unsigned long long flags)
{
    return cudaGraphInstantiate(exec, g, flags);
}

API cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    if (!x)
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < x->g.n && !e; i++) {
        struct node *nd = &x->g.nodes[i];
        switch (nd->kind) {
        case N_KERNEL:
            e = cudaLaunchKernel(nd->func, nd->grid, nd->block, nd->argv, nd->shared, s);
            break;
        case N_COPY:
            e = cudaMemcpyAsync(nd->dst, nd->src, nd->n, nd->copy_kind, s);
            break;
        case N_SET:
            e = cudaMemsetAsync(nd->dst, nd->value, nd->n, s);
            break;
        default:
            e = cudaEventRecord(nd->event, s);
        }
    }
    return e;
}

API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    if (x) {
        free_nodes(&x->g);
        free(x);
    }
    return cudaSuccess;
}

API cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    if (g) {
        free_nodes(g);
        free(g);
    }
    return cudaSuccess;
}
