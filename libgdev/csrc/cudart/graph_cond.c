/* CUDA graphs: conditional nodes (IF with an optional ELSE, WHILE, SWITCH; CUDA 12.4+).
 *
 * A conditional handle is the device address of a 32-bit word in the current device's
 * context (words handed out from pages allocated here, kept until the process ends); a
 * kernel sets it with cudaGraphSetConditional, which the daemon's device library turns into
 * a store (gdevd/gpu/ptx/devlib.py).  A handle belongs to the graph it was created for; with
 * cudaGraphCondAssignDefault its default value is written at the start of every execution of
 * that graph (a launch, or a conditional body run), in the stream, before its first operation.
 *
 * A conditional node owns its body graphs, created with the node as CUDA does (the program
 * fills them through phGraph_out).  The node is decided on the host when a launch reaches it:
 * the launch waits for the stream's work before the node, reads the word and issues the chosen
 * body (for WHILE, again until the word reads 0).  So a graph launch returns once its last
 * conditional node is decided; the work after that stays asynchronous. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "graph.h"

#define WORDS_PER_PAGE 1024     /* 4 KiB of handle words per allocation */
#define SWITCH_MAX 65536        /* bodies of one SWITCH node */

struct cond_handle {
    unsigned long long addr;
    unsigned deflt, flags;
    unsigned long long graph; /* the id of the graph it was created for (graph.h) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cond_handle **handles; /* pointer-stable records: copies read deflt later */
static size_t nhandles, cap;
static unsigned long long page;
static unsigned used = WORDS_PER_PAGE;
static int page_device = -1;

/* The graph whose handles apply to g: the one g was cloned from, if any. */
static unsigned long long identity(const struct CUgraph_st *g)
{
    return g->id;
}

static struct cond_handle *find(unsigned long long addr)
{
    for (size_t i = 0; i < nhandles; i++)
        if (handles[i]->addr == addr)
            return handles[i];
    return NULL;
}

/* A fresh word of the current device (lock held). */
static cudaError_t new_word(unsigned long long *addr)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (!e && (used == WORDS_PER_PAGE || dev != page_device)) {
        void *p = NULL;
        if ((e = cudaMalloc(&p, WORDS_PER_PAGE * sizeof(unsigned))))
            return e;
        page = (unsigned long long)(uintptr_t)p;
        page_device = dev;
        used = 0;
    }
    if (!e)
        *addr = page + sizeof(unsigned) * used++;
    return e;
}

static cudaError_t record(struct cond_handle *h)
{
    if (nhandles == cap) {
        size_t n = cap ? 2 * cap : 64;
        struct cond_handle **p = realloc(handles, n * sizeof *p);
        if (!p)
            return cudaErrorMemoryAllocation;
        handles = p;
        cap = n;
    }
    handles[nhandles++] = h;
    return cudaSuccess;
}

API cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *out, cudaGraph_t g,
                                                 unsigned int deflt, unsigned int flags)
{
    if (!out || !g || (flags & ~(unsigned)cudaGraphCondAssignDefault))
        return rt_set(cudaErrorInvalidValue);
    struct cond_handle *h = calloc(1, sizeof *h);
    if (!h)
        return rt_set(cudaErrorMemoryAllocation);
    *h = (struct cond_handle){.deflt = deflt, .flags = flags, .graph = identity(g)};
    pthread_mutex_lock(&lock);
    cudaError_t e = new_word(&h->addr);
    if (!e)
        e = cudaMemcpy((void *)(uintptr_t)h->addr, &deflt, sizeof deflt,
                       cudaMemcpyHostToDevice);
    if (!e)
        e = record(h);
    pthread_mutex_unlock(&lock);
    if (e) {
        free(h);
        return rt_set(e);
    }
    *out = h->addr;
    return cudaSuccess;
}

cudaError_t rt_cond_reset(const struct CUgraph_st *g, cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; !e && i < nhandles; i++) {
        const struct cond_handle *h = handles[i];
        if (h->graph == identity(g) && (h->flags & cudaGraphCondAssignDefault))
            e = cudaMemcpyAsync((void *)(uintptr_t)h->addr, &h->deflt, sizeof h->deflt,
                                cudaMemcpyHostToDevice, s);
    }
    pthread_mutex_unlock(&lock);
    return e;
}

/* A conditional node's operation from CUDA's parameters: its bodies created empty. */
cudaError_t rt_cond_op(struct op *op, struct cudaConditionalNodeParams *p,
                       const struct CUgraph_st *g)
{
    const unsigned most = p->type == cudaGraphCondTypeIf ? 2
                          : p->type == cudaGraphCondTypeWhile ? 1 : SWITCH_MAX;
    if ((unsigned)p->type > cudaGraphCondTypeSwitch || !p->size || p->size > most)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&lock);
    const struct cond_handle *h = find(p->handle);
    int ours = h && h->graph == identity(g);
    pthread_mutex_unlock(&lock);
    if (!ours) /* CUDA: the handle must be created for the graph that holds the node */
        return cudaErrorInvalidValue;
    struct cond_op *c = &op->u.cond;
    *op = (struct op){.type = cudaGraphNodeTypeConditional};
    *c = (struct cond_op){.handle = p->handle, .type = p->type, .size = p->size};
    if (!(c->bodies = calloc(p->size, sizeof *c->bodies)))
        return cudaErrorMemoryAllocation;
    for (unsigned i = 0; i < p->size; i++)
        if (rt_graph_new(&c->bodies[i])) {
            rt_op_free(op);
            return cudaErrorMemoryAllocation;
        }
    p->phGraph_out = c->bodies;
    return cudaSuccess;
}

cudaError_t rt_cond_copy(struct cond_op *to, const struct cond_op *from)
{
    *to = *from;
    if (!(to->bodies = calloc(from->size, sizeof *to->bodies)))
        return cudaErrorMemoryAllocation;
    for (unsigned i = 0; i < from->size; i++)
        if (rt_graph_clone(&to->bodies[i], from->bodies[i])) {
            rt_cond_free(to);
            return cudaErrorMemoryAllocation;
        }
    return cudaSuccess;
}

void rt_cond_free(struct cond_op *c)
{
    for (unsigned i = 0; c->bodies && i < c->size; i++)
        rt_graph_free(c->bodies[i]);
    free(c->bodies);
    c->bodies = NULL;
}

/* The body a value chooses, or -1 for none. */
static int chosen(const struct cond_op *c, unsigned v)
{
    if (c->type == cudaGraphCondTypeSwitch)
        return v < c->size ? (int)v : -1;
    return v ? 0 : c->type == cudaGraphCondTypeIf && c->size == 2 ? 1 : -1;
}

/* The word read once the stream's work before it is done, and the body it chooses; a WHILE
 * node's body is instantiated once and launched as often as the word asks. */
cudaError_t rt_cond_issue(const struct cond_op *c, cudaStream_t s)
{
    cudaGraphExec_t x = NULL;
    cudaError_t e;
    for (;;) {
        unsigned v = 0;
        e = cudaMemcpyAsync(&v, (void *)(uintptr_t)c->handle, sizeof v,
                            cudaMemcpyDeviceToHost, s);
        if (!e)
            e = cudaStreamSynchronize(s);
        int body = e ? -1 : chosen(c, v);
        if (body < 0 || (!x && (e = cudaGraphInstantiate(&x, c->bodies[body], 0))))
            break;
        if ((e = cudaGraphLaunch(x, s)) || c->type != cudaGraphCondTypeWhile)
            break;
    }
    if (x)
        cudaGraphExecDestroy(x);
    return e;
}
