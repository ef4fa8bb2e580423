/* User objects: a program's resource whose destructor runs when the last reference goes;
 * graphs hold references (cudaGraphRetainUserObject), their clones and the executable graphs
 * made from them too (an executable graph keeps a clone of its graph), so a resource a graph
 * uses lives until the last graph that may use it is destroyed.  The destructor runs in the
 * thread that drops the last reference (CUDA runs it on a thread of its own; either way it
 * must not call CUDA). */
#include <pthread.h>
#include <stdlib.h>

#include "graph.h"

struct CUuserObject_st {
    void *ptr;
    cudaHostFn_t destroy;
    unsigned refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

API cudaError_t cudaUserObjectCreate(cudaUserObject_t *out, void *ptr, cudaHostFn_t destroy,
                                     unsigned int refs, unsigned int flags)
{
    if (!out || !destroy || !refs || flags != cudaUserObjectNoDestructorSync)
        return rt_set(cudaErrorInvalidValue);
    struct CUuserObject_st *o = calloc(1, sizeof *o);
    if (!o)
        return rt_set(cudaErrorMemoryAllocation);
    *o = (struct CUuserObject_st){.ptr = ptr, .destroy = destroy, .refs = refs};
    *out = o;
    return cudaSuccess;
}

API cudaError_t cudaUserObjectRetain(cudaUserObject_t o, unsigned int count)
{
    if (!o || !count)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    o->refs += count;
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

API cudaError_t cudaUserObjectRelease(cudaUserObject_t o, unsigned int count)
{
    if (!o || !count)
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    int bad = count > o->refs, last = !bad && o->refs == count;
    if (!bad)
        o->refs -= count;
    pthread_mutex_unlock(&lock);
    if (bad) /* more than it holds: the caller's bug, refused rather than freed early */
        return rt_set(cudaErrorInvalidValue);
    if (last) {
        o->destroy(o->ptr);
        free(o);
    }
    return cudaSuccess;
}

/* The graph's entry for o, added (with 0 references) if absent; NULL without memory. */
static struct graph_ref *entry(struct CUgraph_st *g, cudaUserObject_t o)
{
    for (size_t i = 0; i < g->nrefs; i++)
        if (g->refs[i].obj == o)
            return &g->refs[i];
    struct graph_ref *p = realloc(g->refs, (g->nrefs + 1) * sizeof *p);
    if (!p)
        return NULL;
    g->refs = p;
    p[g->nrefs] = (struct graph_ref){.obj = o};
    return &p[g->nrefs++];
}

API cudaError_t cudaGraphRetainUserObject(cudaGraph_t g, cudaUserObject_t o, unsigned int count,
                                          unsigned int flags)
{
    if (!g || !o || !count || (flags & ~(unsigned)cudaGraphUserObjectMove))
        return rt_set(cudaErrorInvalidValue);
    struct graph_ref *r = entry(g, o);
    if (!r)
        return rt_set(cudaErrorMemoryAllocation);
    if (!(flags & cudaGraphUserObjectMove)) /* new references, else the caller's move in */
        cudaUserObjectRetain(o, count);
    r->count += count;
    return cudaSuccess;
}

API cudaError_t cudaGraphReleaseUserObject(cudaGraph_t g, cudaUserObject_t o, unsigned int count)
{
    struct graph_ref *r = NULL;
    for (size_t i = 0; g && i < g->nrefs; i++)
        r = g->refs[i].obj == o ? &g->refs[i] : r;
    if (!r || !count || count > r->count)
        return rt_set(cudaErrorInvalidValue);
    r->count -= count;
    return cudaUserObjectRelease(o, count);
}

cudaError_t rt_refs_copy(struct CUgraph_st *to, const struct CUgraph_st *from)
{
    if (!from->nrefs)
        return cudaSuccess;
    if (!(to->refs = calloc(from->nrefs, sizeof *to->refs)))
        return cudaErrorMemoryAllocation;
    for (size_t i = 0; i < from->nrefs; i++) {
        to->refs[i] = from->refs[i];
        if (to->refs[i].count)
            cudaUserObjectRetain(to->refs[i].obj, to->refs[i].count);
    }
    to->nrefs = from->nrefs;
    return cudaSuccess;
}

void rt_refs_free(struct CUgraph_st *g)
{
    for (size_t i = 0; i < g->nrefs; i++)
        if (g->refs[i].count)
            cudaUserObjectRelease(g->refs[i].obj, g->refs[i].count);
    free(g->refs);
    g->refs = NULL;
    g->nrefs = 0;
}
