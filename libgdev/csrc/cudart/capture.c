/* Stream capture into a CUDA graph's DAG.  Between cudaStreamBeginCapture and
 * cudaStreamEndCapture, kernel launches, async copies and memsets, host functions and graph
 * launches issued in a created stream (the legacy NULL stream cannot capture, as in CUDA)
 * become nodes that depend on the stream's frontier (its last captured nodes), and the new
 * node becomes the frontier.  cudaEventRecord in a capturing stream notes the frontier in the
 * event; cudaStreamWaitEvent on such an event merges that frontier into the waiting stream's,
 * and a stream that was not capturing joins the capture (the fork/join of CUDA's samples).
 * Waiting on an event recorded outside the capture, or recording with
 * cudaEventRecordExternal, adds an event node.  cudaStreamEndCapture on the stream that
 * began the capture ends it for every stream that joined, and is refused while a joined
 * stream's last work is not an ancestor of the origin's frontier (cudaErrorStreamCaptureUnjoined).
 * Synchronizing a capturing stream invalidates the capture. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture.h"

struct seq cap_seqs[MAX_SEQS];
struct cap cap_streams[MAX_CAPS];
struct cev cap_events[MAX_EVENTS];
unsigned long long cap_next_id = 1;
pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;

struct cap *cap_find(cudaStream_t s)
{
    for (int i = 0; s && i < MAX_CAPS; i++)
        if (cap_streams[i].seq && cap_streams[i].stream == s)
            return &cap_streams[i];
    return NULL;
}

struct cev *cap_event(cudaEvent_t e)
{
    for (int i = 0; i < MAX_EVENTS; i++)
        if (cap_events[i].seq && cap_events[i].event == e)
            return &cap_events[i];
    return NULL;
}

cudaError_t cap_nodes(struct nodeset *to, const cudaGraphNode_t *nodes, size_t n, int merge)
{
    size_t have = merge ? to->n : 0;
    cudaGraphNode_t *v = realloc(to->v, (have + n + 1) * sizeof *v);
    if (!v)
        return cudaErrorMemoryAllocation;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t k = 0; k < have && !dup; k++)
            dup = v[k] == nodes[i];
        if (!dup)
            v[have++] = nodes[i];
    }
    to->v = v;
    to->n = have;
    return cudaSuccess;
}

int rt_capturing(cudaStream_t s)
{
    pthread_mutex_lock(&cap_lock);
    int yes = cap_find(s) != NULL;
    pthread_mutex_unlock(&cap_lock);
    return yes;
}

/* Add a node of *op after s's frontier, which it becomes (op freed on failure). */
static cudaError_t record(cudaStream_t s, struct op *op)
{
    cudaGraphNode_t nd;
    cudaError_t e = cudaErrorStreamCaptureImplicit;
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    if (c && c->seq->invalid)
        e = cudaErrorStreamCaptureInvalidated;
    else if (c && !(e = rt_graph_add(c->seq->graph, op, c->front.v, c->front.n, &nd)))
        e = cap_nodes(&c->front, &nd, 1, 0);
    pthread_mutex_unlock(&cap_lock);
    rt_op_free(op);
    return e;
}

cudaError_t rt_capture_kernel(cudaStream_t s, const void *func, dim3 grid, dim3 block,
                              void **args, size_t shared)
{
    struct op op = {.type = cudaGraphNodeTypeKernel};
    struct cudaKernelNodeParams p = {.func = (void *)func, .gridDim = grid, .blockDim = block,
                                     .sharedMemBytes = (unsigned)shared, .kernelParams = args};
    cudaError_t e = rt_kernel_op(&op.u.k, &p);
    return e ? e : record(s, &op);
}

cudaError_t rt_capture_copy3d(cudaStream_t s, const struct cudaMemcpy3DParms *p)
{
    struct op op = {.type = cudaGraphNodeTypeMemcpy};
    cudaError_t e = rt_copy_valid(p);
    if (e)
        return e;
    op.u.copy = *p;
    return record(s, &op);
}

cudaError_t rt_capture_copy(cudaStream_t s, void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind)
{
    if (!n) /* nothing to copy: no node */
        return cudaSuccess;
    struct cudaMemcpy3DParms p = {
        .srcPtr = {.ptr = (void *)src, .pitch = n, .xsize = n, .ysize = 1},
        .dstPtr = {.ptr = dst, .pitch = n, .xsize = n, .ysize = 1},
        .extent = {.width = n, .height = 1, .depth = 1}, .kind = kind};
    return rt_capture_copy3d(s, &p);
}

cudaError_t rt_capture_memset2d(cudaStream_t s, void *p, size_t pitch, int value,
                                size_t width, size_t height)
{
    struct op op = {.type = cudaGraphNodeTypeMemset};
    op.u.set = (struct cudaMemsetParams){.dst = p, .pitch = pitch, .value = (unsigned char)value,
                                         .elementSize = 1, .width = width, .height = height};
    cudaError_t e = rt_memset_valid(&op.u.set);
    return e ? e : record(s, &op);
}

cudaError_t rt_capture_memset(cudaStream_t s, void *p, int value, size_t n)
{
    return rt_capture_memset2d(s, p, n, value, n, 1);
}

cudaError_t rt_capture_host(cudaStream_t s, cudaHostFn_t fn, void *data)
{
    struct op op = {.type = cudaGraphNodeTypeHost, .u.host = {fn, data}};
    return fn ? record(s, &op) : cudaErrorInvalidValue;
}

cudaError_t rt_capture_graph(cudaStream_t s, const struct CUgraph_st *g)
{
    struct op op = {.type = cudaGraphNodeTypeGraph};
    cudaError_t e = rt_graph_clone(&op.u.child, g);
    return e ? e : record(s, &op);
}

/* cudaMallocAsync in a capturing stream: a graph allocation, made now (graph_mem.c). */
cudaError_t rt_capture_alloc(cudaStream_t s, size_t size, void **p)
{
    struct op op;
    struct cudaMemAllocNodeParams a = {
        .poolProps = {.allocType = cudaMemAllocationTypePinned,
                      .location = {cudaMemLocationTypeDevice, rt_device()}},
        .bytesize = size};
    cudaError_t e = rt_alloc_op(&op, &a);
    if (!e && !(e = record(s, &op)))
        *p = a.dptr;
    return e;
}

/* cudaFreeAsync in a capturing stream: only a graph allocation can be freed in a graph. */
cudaError_t rt_capture_free(cudaStream_t s, void *p)
{
    struct op op = {.type = cudaGraphNodeTypeMemFree, .u.freed = p};
    return rt_gmem_owned(p) ? record(s, &op) : cudaErrorInvalidValue;
}

/* cudaEventRecord[WithFlags] in a capturing stream: external records are nodes; others note
 * the frontier in the event, for the streams that wait on it. */
cudaError_t rt_capture_event(cudaStream_t s, cudaEvent_t ev, unsigned flags)
{
    struct op op = {.type = cudaGraphNodeTypeEventRecord, .u.event = ev};
    if (flags & cudaEventRecordExternal)
        return record(s, &op);
    cudaError_t e = cudaErrorStreamCaptureImplicit;
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    struct cev *ce = cap_event(ev);
    for (int i = 0; !ce && i < MAX_EVENTS; i++)
        ce = cap_events[i].seq ? NULL : &cap_events[i];
    if (c && !ce)
        e = cudaErrorInvalidValue; /* too many events recorded in captures at once */
    else if (c && !(e = cap_nodes(&ce->nodes, c->front.v, c->front.n, 0))) {
        ce->event = ev;
        ce->seq = c->seq;
    }
    pthread_mutex_unlock(&cap_lock);
    return e;
}

void rt_capture_forget_event(cudaEvent_t ev)
{
    pthread_mutex_lock(&cap_lock);
    struct cev *ce = cap_event(ev);
    if (ce) {
        free(ce->nodes.v);
        *ce = (struct cev){0};
    }
    pthread_mutex_unlock(&cap_lock);
}

/* Join s to ce's capture with ce's nodes as its frontier (s was not capturing). */
static cudaError_t join(cudaStream_t s, struct cev *ce)
{
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) {
        ce->seq->invalid = 1;
        return cudaErrorStreamCaptureImplicit;
    }
    for (int i = 0; i < MAX_CAPS; i++)
        if (!cap_streams[i].seq) {
            cap_streams[i] = (struct cap){.stream = s, .seq = ce->seq};
            return cap_nodes(&cap_streams[i].front, ce->nodes.v, ce->nodes.n, 0);
        }
    return cudaErrorInvalidValue; /* too many capturing streams */
}

/* cudaStreamWaitEvent: *handled = 1 when capture took the wait (joined, merged, or a node). */
cudaError_t rt_capture_wait(cudaStream_t s, cudaEvent_t ev, int *handled)
{
    struct op op = {.type = cudaGraphNodeTypeWaitEvent, .u.event = ev};
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&cap_lock);
    struct cap *c = cap_find(s);
    struct cev *ce = cap_event(ev);
    *handled = c || ce;
    if (ce && c && c->seq != ce->seq)
        e = cudaErrorStreamCaptureIsolation; /* two captures cannot merge */
    else if (ce && c)
        e = cap_nodes(&c->front, ce->nodes.v, ce->nodes.n, 1);
    else if (ce)
        e = join(s, ce);
    pthread_mutex_unlock(&cap_lock);
    return c && !ce ? record(s, &op) : e;
}
