/* Capture sequences (capture.c says what is recorded): begin, end, invalidate and query. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture.h"

static int can_capture(cudaStream_t s)
{
    return s && s != cudaStreamLegacy && s != cudaStreamPerThread;
}

/* Begin a sequence in s into g (owned: made here) after deps[0..n). */
static cudaError_t begin(cudaStream_t s, struct CUgraph_st *g, int owned,
                         const cudaGraphNode_t *deps, size_t n)
{
    cudaError_t e = cudaErrorInvalidValue; /* too many sequences or streams at once */
    struct seq *q = NULL;
    struct cap *c = NULL;
    pthread_mutex_lock(&cap_lock);
    if (cap_find(s))
        e = cudaErrorIllegalState;
    for (int i = 0; e != cudaErrorIllegalState && i < MAX_SEQS && !q; i++)
        q = cap_seqs[i].graph ? NULL : &cap_seqs[i];
    for (int i = 0; q && i < MAX_CAPS && !c; i++)
        c = cap_streams[i].seq ? NULL : &cap_streams[i];
    if (c && !(e = cap_nodes(&c->front, deps, n, 0))) {
        *q = (struct seq){.graph = g, .origin = s, .id = cap_next_id++, .owned = owned};
        c->stream = s;
        c->seq = q;
    }
    pthread_mutex_unlock(&cap_lock);
    return e;
}

API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode; /* global, thread-local and relaxed alike: unsafe calls are not policed */
    struct CUgraph_st *g;
    if (!can_capture(s))
        return rt_set(cudaErrorStreamCaptureUnsupported);
    cudaError_t e = rt_graph_new(&g);
    if (!e && (e = begin(s, g, 1, NULL, 0)))
        rt_graph_free(g);
    return rt_set(e);
}

API cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g,
                                              const cudaGraphNode_t *deps,
                                              const cudaGraphEdgeData *data, size_t n,
                                              enum cudaStreamCaptureMode mode)
{
    (void)mode;
    static const cudaGraphEdgeData plain;
    if (!can_capture(s))
        return rt_set(cudaErrorStreamCaptureUnsupported);
    if (!g || (n && !deps))
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; i < n; i++)
        if (!deps[i] || deps[i]->graph != g || (data && memcmp(&data[i], &plain, sizeof plain)))
            return rt_set(cudaErrorInvalidValue);
    return rt_set(begin(s, g, 0, deps, n));
}

/* Whether every node of every joined stream's frontier is the origin's frontier or one of
 * its ancestors (marks in index: 1 = reached from the origin's frontier). */
static int joined(const struct seq *q, const struct cap *origin)
{
    struct CUgraph_st *g = q->graph;
    cudaGraphNode_t *stack = malloc((g->n + 1) * sizeof *stack);
    size_t top = 0;
    if (!stack)
        return 0;
    for (size_t i = 0; i < g->n; i++)
        g->nodes[i]->index = 0;
    for (size_t i = 0; i < origin->front.n; i++)
        if (!origin->front.v[i]->index++)
            stack[top++] = origin->front.v[i];
    while (top) {
        cudaGraphNode_t nd = stack[--top];
        for (size_t d = 0; d < nd->ndeps; d++)
            if (!nd->deps[d]->index++)
                stack[top++] = nd->deps[d];
    }
    free(stack);
    for (int i = 0; i < MAX_CAPS; i++)
        for (size_t k = 0; cap_streams[i].seq == q && k < cap_streams[i].front.n; k++)
            if (!cap_streams[i].front.v[k]->index)
                return 0;
    return 1;
}

/* Free every stream and event slot of q, and q's own. */
static void end_seq(struct seq *q)
{
    for (int i = 0; i < MAX_CAPS; i++)
        if (cap_streams[i].seq == q) {
            free(cap_streams[i].front.v);
            cap_streams[i] = (struct cap){0};
        }
    for (int i = 0; i < MAX_EVENTS; i++)
        if (cap_events[i].seq == q) {
            free(cap_events[i].nodes.v);
            cap_events[i] = (struct cev){0};
        }
    *q = (struct seq){0};
}

/* graph may be NULL when the capture went into the program's own graph
 * (cudaStreamBeginCaptureToGraph): the nodes are already there. */
API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    struct seq q = c ? *c->seq : (struct seq){0};
    if (!graph && (!c || q.owned)) {
        pthread_mutex_unlock(&cap_lock);
        return rt_set(cudaErrorInvalidValue);
    }
    if (!c)
        e = cudaErrorIllegalState;
    else if (q.origin != s)
        e = cudaErrorStreamCaptureUnmatched; /* joined streams do not end it */
    else if (q.invalid)
        e = cudaErrorStreamCaptureInvalidated;
    else if (!joined(c->seq, c))
        e = cudaErrorStreamCaptureUnjoined;
    if (c && e != cudaErrorStreamCaptureUnmatched)
        end_seq(c->seq);
    else if (c)
        c->seq->invalid = 1;
    pthread_mutex_unlock(&cap_lock);
    if (e && e != cudaErrorIllegalState && e != cudaErrorStreamCaptureUnmatched && q.owned)
        rt_graph_free(q.graph);
    if (graph)
        *graph = e ? NULL : q.graph;
    return rt_set(e);
}

/* A synchronization of a capturing stream: refused, and the capture is invalidated. */
cudaError_t rt_capture_sync(cudaStream_t s)
{
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    if (c)
        c->seq->invalid = 1;
    pthread_mutex_unlock(&cap_lock);
    return c ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    return cudaStreamGetCaptureInfo(s, status, NULL, NULL, NULL, NULL, NULL);
}

/* The frontier handed out stays valid until the next call on the stream, as CUDA says. */
API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *status,
                                         unsigned long long *id, cudaGraph_t *graph,
                                         const cudaGraphNode_t **deps,
                                         const cudaGraphEdgeData **data, size_t *n)
{
    if (!status || (data && !deps))
        return rt_set(cudaErrorInvalidValue);
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    *status = !c ? cudaStreamCaptureStatusNone
                 : c->seq->invalid ? cudaStreamCaptureStatusInvalidated
                                   : cudaStreamCaptureStatusActive;
    if (c && id)
        *id = c->seq->id;
    if (c && graph)
        *graph = c->seq->graph;
    if (c && deps)
        *deps = c->front.v;
    if (c && data)
        *data = NULL; /* every edge is a default one */
    if (c && n)
        *n = c->front.n;
    pthread_mutex_unlock(&cap_lock);
    return cudaSuccess;
}

API cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t *deps,
                                                    const cudaGraphEdgeData *data, size_t n,
                                                    unsigned int flags)
{
    static const cudaGraphEdgeData plain;
    cudaError_t e = cudaErrorIllegalState;
    if ((n && !deps) || flags > cudaStreamSetCaptureDependencies)
        return rt_set(cudaErrorInvalidValue);
    for (size_t i = 0; data && i < n; i++)
        if (memcmp(&data[i], &plain, sizeof plain))
            return rt_set(cudaErrorNotSupported);
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    for (size_t i = 0; c && i < n; i++)
        if (!deps[i] || deps[i]->graph != c->seq->graph)
            c = NULL, e = cudaErrorInvalidValue;
    if (c)
        e = cap_nodes(&c->front, deps, n, flags == cudaStreamAddCaptureDependencies);
    pthread_mutex_unlock(&cap_lock);
    return rt_set(e);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaStreamBeginCaptureToGraph) RT_PTSZ(cudaStreamBeginCapture)
RT_PTSZ(cudaStreamEndCapture) RT_PTSZ(cudaStreamGetCaptureInfo) RT_PTSZ(cudaStreamIsCapturing)
RT_PTSZ(cudaStreamUpdateCaptureDependencies)
