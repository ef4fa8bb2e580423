/* Stream capture as libcuda.so.1 has it: none.  CUDA graphs and stream capture are gdev-py's
 * runtime's (cudart/graph*.c, capture*.c); NVIDIA's static runtime, which builds them on the
 * driver's cuGraph* and cuStreamBeginCapture, is told so when it begins one.  What it asks of
 * every stream before work that must not be captured (libraries check cudaStreamIsCapturing)
 * answers as CUDA does for a stream that is not capturing. */
#include "cuda_internal.h"

static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

API CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    STREAM_CTX(c, s);
    (void)c;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status,
                                       cuuint64_t *id, CUgraph *graph,
                                       const CUgraphNode **deps, size_t *ndeps)
{
    (void)id, (void)graph, (void)deps, (void)ndeps; /* written only while capturing */
    return cuStreamIsCapturing(s, status);
}

API CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status,
                                       cuuint64_t *id, CUgraph *graph,
                                       const CUgraphNode **deps, const CUgraphEdgeData **edges,
                                       size_t *ndeps)
{
    (void)edges;
    return cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps);
}

API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static CUresult no_graphs(const char *call)
{
    static int said;
    cu_notice(&said, "%s: CUDA graphs and stream capture are in gdev's CUDA runtime, not its "
              "driver: rebuild the program with nvcc -cudart shared", call);
    return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "%s: graphs and stream capture are gdev's "
                   "runtime's (nvcc -cudart shared)", call);
}

API CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    (void)s, (void)mode;
    return no_graphs("cuStreamBeginCapture");
}

API CUresult cuGraphCreate(CUgraph *graph, unsigned int flags)
{
    (void)graph, (void)flags;
    return no_graphs("cuGraphCreate");
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuStreamIsCapturing) PTSZ(cuStreamGetCaptureInfo_v2) PTSZ(cuStreamGetCaptureInfo_v3)
PTSZ(cuStreamBeginCapture_v2)
