/* Stream attributes (cudaStreamSet/Get/CopyAttributes) and the persisting-L2 reset are
 * libcuda's (streaminfo.c, ctxinfo.c), as NVIDIA's runtime calls its driver: the attribute
 * ids and values are the driver's launch attributes.  And the thread's capture mode. */
#include "cudart_internal.h"


API cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID id,
                                       const cudaStreamAttrValue *v)
{
    IN_CTX();
    return rt_set(rt_from(cuStreamSetAttribute(s, (CUstreamAttrID)id,
                                               (const CUstreamAttrValue *)v)));
}

API cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaStreamAttrID id,
                                       cudaStreamAttrValue *v)
{
    IN_CTX();
    return rt_set(rt_from(cuStreamGetAttribute(s, (CUstreamAttrID)id, (CUstreamAttrValue *)v)));
}

API cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
    IN_CTX();
    return rt_set(rt_from(cuStreamCopyAttributes(dst, src)));
}

API cudaError_t cudaCtxResetPersistingL2Cache(void)
{
    IN_CTX();
    return rt_set(rt_from(cuCtxResetPersistingL2Cache()));
}

static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* The thread's mode is kept and exchanged; capture does not police unsafe calls by mode. */
API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || *mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed)
        return rt_set(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaStreamCopyAttributes) RT_PTSZ(cudaStreamGetAttribute)
RT_PTSZ(cudaStreamSetAttribute)
