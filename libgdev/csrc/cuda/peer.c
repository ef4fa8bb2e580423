/* Contexts and devices among each other: peer access and peer copies.  Each context is its
 * own address space (a Gdev handle), so no context can map another's memory: a device
 * cannot access a peer (cuDeviceCanAccessPeer 0), enabling peer access is
 * CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, and a copy between two contexts goes through the
 * host, as CUDA's copies between devices without peer access do.  A peer copy within one
 * context is a device-to-device copy. */
#include <stdlib.h>

#include "cuda_internal.h"

#define PEER_CHUNK (1u << 20) /* bytes staged through the host per step */

API CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    CUresult r = cu_valid_device(dev);
    if (!r)
        r = cu_valid_device(peer);
    if (r || !can)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *can = 0;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attr, CUdevice src,
                                     CUdevice dst)
{
    CUresult r = cu_valid_device(src);
    if (!r)
        r = cu_valid_device(dst);
    if (!r && src == dst)
        r = CUDA_ERROR_INVALID_DEVICE;
    if (r || !value || attr < CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK ||
        attr > CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    *value = 0; /* no access, no atomics, no array access; rank 0 */
    return CUDA_SUCCESS;
}

API CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    CURRENT(c);
    if (!peer || peer->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_fail(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "cuCtxEnablePeerAccess: each context "
                   "is its own address space");
}

API CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    CURRENT(c);
    if (!peer || peer->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* Copy n bytes from src of context `from` to dst of context `to` through a host buffer. */
static CUresult staged(CUdeviceptr dst, CUcontext to, CUdeviceptr src, CUcontext from,
                       size_t n)
{
    uint8_t *buf = malloc(n < PEER_CHUNK ? n : PEER_CHUNK);
    CUresult r = buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t done = 0; !r && done < n; done += PEER_CHUNK) {
        size_t k = n - done < PEER_CHUNK ? n - done : PEER_CHUNK;
        if (!(r = cuCtxPushCurrent(from))) {
            r = cuMemcpyDtoH(buf, src + done, k);
            cuCtxPopCurrent(NULL);
        }
        if (!r && !(r = cuCtxPushCurrent(to))) {
            r = cuMemcpyHtoD(dst + done, buf, k);
            cuCtxPopCurrent(NULL);
        }
    }
    free(buf);
    return r;
}

static CUresult peer_copy(CUdeviceptr dst, CUcontext to, CUdeviceptr src, CUcontext from,
                          size_t n, CUstream s, int async)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    if (!to || !from || to->destroyed || from->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!n)
        return CUDA_SUCCESS;
    if (to == from) {
        if ((r = cuCtxPushCurrent(to)))
            return r;
        r = async ? cuMemcpyDtoDAsync(dst, src, n, s) : cuMemcpyDtoD(dst, src, n);
        cuCtxPopCurrent(NULL);
        return r;
    }
    if (async && (r = cuStreamSynchronize(s))) /* in order after the stream's work */
        return r;
    return staged(dst, to, src, from, n);
}

API CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx,
                          size_t n)
{
    return peer_copy(dst, dstCtx, src, srcCtx, n, NULL, 0);
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src,
                               CUcontext srcCtx, size_t n, CUstream s)
{
    return peer_copy(dst, dstCtx, src, srcCtx, n, s, 1);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTDS(cuMemcpyPeer) PTSZ(cuMemcpyPeerAsync)
