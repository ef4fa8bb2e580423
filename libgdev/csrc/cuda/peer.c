/* Contexts and devices among each other: peer access and peer copies.  Each context is its
 * own address space (a Gdev handle), so no context can map another's memory: a device
 * cannot access a peer (cuDeviceCanAccessPeer 0), enabling peer access is
 * CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, and a copy between two contexts goes through the
 * host, as CUDA's copies between devices without peer access do.  A peer copy within one
 * context is a device-to-device copy. */
#include <stdint.h>
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
    /* A context is not its own peer. CUDA's header says CUDA_ERROR_INVALID_CONTEXT, but
     * NVIDIA's runtime passes this call's answer through and applications see
     * cudaErrorInvalidDevice for cudaDeviceEnablePeerAccess(own device): the driver's
     * CUDA_ERROR_INVALID_DEVICE. */
    if (peer == c)
        return CUDA_ERROR_INVALID_DEVICE;
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

/* One side of a 3D peer copy as a side of a CUDA_MEMCPY3D (the context is the caller's). */
#define SIDE3D(q, p, s) do { (q).s##XInBytes = (p)->s##XInBytes; (q).s##Y = (p)->s##Y; \
    (q).s##Z = (p)->s##Z; (q).s##LOD = (p)->s##LOD; (q).s##MemoryType = (p)->s##MemoryType; \
    (q).s##Device = (p)->s##Device; (q).s##Array = (p)->s##Array; \
    (q).s##Pitch = (p)->s##Pitch; (q).s##Height = (p)->s##Height; } while (0)

/* The 3D copy of p (without its contexts) in context ctx. */
static CUresult copy3d_in(CUcontext ctx, const CUDA_MEMCPY3D *q, CUstream s, int async)
{
    CUresult r = cuCtxPushCurrent(ctx);
    if (r)
        return r;
    r = async ? cuMemcpy3DAsync(q, s) : cuMemcpy3D(q);
    cuCtxPopCurrent(NULL);
    return r;
}

/* A 3D copy between two contexts (device memory or arrays): slice by slice through a host
 * buffer (WidthInBytes x Height bytes), each slice copied out in the source context `from`
 * and in in the destination's, `to`. */
static CUresult staged3d(const CUDA_MEMCPY3D_PEER *p, CUcontext from, CUcontext to)
{
    size_t w = p->WidthInBytes, h = p->Height, depth = p->Depth ? p->Depth : 1;
    if (!w || !h)
        return CUDA_SUCCESS;
    if (h > SIZE_MAX / w)
        return CUDA_ERROR_INVALID_VALUE;
    uint8_t *buf = malloc(w * h);
    CUresult r = buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t z = 0; !r && z < depth; z++) {
        CUDA_MEMCPY3D out = {0}, in = {0};
        SIDE3D(out, p, src);
        out.srcZ = p->srcZ + z;
        out.dstMemoryType = CU_MEMORYTYPE_HOST;
        out.dstHost = buf;
        out.dstPitch = w;
        out.dstHeight = h;
        SIDE3D(in, p, dst);
        in.dstHost = p->dstHost;
        in.dstZ = p->dstZ + z;
        in.srcMemoryType = CU_MEMORYTYPE_HOST;
        in.srcHost = buf;
        in.srcPitch = w;
        in.srcHeight = h;
        out.WidthInBytes = in.WidthInBytes = w;
        out.Height = in.Height = h;
        out.Depth = in.Depth = 1;
        r = copy3d_in(from, &out, NULL, 0);
        if (!r)
            r = copy3d_in(to, &in, NULL, 0);
    }
    free(buf);
    return r;
}

/* The context a side of a 3D peer copy lives in: the given one for device memory, the
 * array's own for an array (INVALID_HANDLE if it is not a live array), none for host memory.
 * INVALID_CONTEXT for device memory without a live context. */
static CUresult side_context(CUmemorytype type, CUcontext given, CUarray arr, CUcontext *out)
{
    *out = NULL;
    if (type == CU_MEMORYTYPE_ARRAY)
        return (*out = cu_array_context(arr)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return CUDA_SUCCESS;
    *out = given;
    return given && !given->destroyed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* cuMemcpy3DPeer: each side in device memory or an array belongs to a context (see
 * side_context); one context, or none, is a plain 3D copy in it, two are staged through the
 * host slice by slice. */
static CUresult peer_copy3d(const CUDA_MEMCPY3D_PEER *p, CUstream s, int async)
{
    CUcontext cur = NULL, from, to;
    CUresult r = cu_current(&cur);
    if (r)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = side_context(p->srcMemoryType, p->srcContext, p->srcArray, &from)) ||
        (r = side_context(p->dstMemoryType, p->dstContext, p->dstArray, &to)))
        return r;
    if (from && to && from != to) {
        if (async && (r = cuStreamSynchronize(s))) /* in order after the stream's work */
            return r;
        return staged3d(p, from, to);
    }
    CUDA_MEMCPY3D q = {0};
    SIDE3D(q, p, src);
    SIDE3D(q, p, dst);
    q.srcHost = p->srcHost;
    q.dstHost = p->dstHost;
    q.WidthInBytes = p->WidthInBytes;
    q.Height = p->Height;
    q.Depth = p->Depth;
    return copy3d_in(from ? from : to ? to : cur, &q, s, async);
}

API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    return peer_copy3d(p, NULL, 0);
}

API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return peer_copy3d(p, s, 1);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTDS(cuMemcpyPeer) PTSZ(cuMemcpyPeerAsync) PTDS(cuMemcpy3DPeer) PTSZ(cuMemcpy3DPeerAsync)
