/* Devices among each other: choosing one, PCI addresses (libcuda's ids.c), peer access and
 * peer copies.  Each vGPU context is its own address space, so no device can map another's
 * memory (cudaDeviceCanAccessPeer is 0, enabling peer access is
 * cudaErrorPeerAccessUnsupported); a copy between devices is libcuda's cuMemcpyPeer between
 * their primary contexts, through the host, as CUDA's copies without peer access are. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

cudaError_t rt_valid_device(int dev)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    return dev < 0 || dev >= n || dev >= MAX_DEVICES ? cudaErrorInvalidDevice : cudaSuccess;
}

/* The device that meets prop's compute capability and memory, else the closest (device 0
 * when none asks for more than another has). */
API cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    int n, best = 0;
    long best_score = -1;
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (!device || !prop)
        return rt_set(cudaErrorInvalidValue);
    for (int i = 0; !e && i < n; i++) {
        if ((e = cudaGetDeviceProperties(&p, i)))
            break;
        long score = (p.major * 10 + p.minor >= prop->major * 10 + prop->minor)
                     + (p.totalGlobalMem >= prop->totalGlobalMem);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    if (!e)
        *device = best;
    return rt_set(e);
}

API cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device)
{
    cudaError_t e = rt_valid_device(device);
    if (!e && (!id || len <= 0))
        e = cudaErrorInvalidValue;
    return rt_set(e ? e : rt_from(cuDeviceGetPCIBusId(id, len, device)));
}

API cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *id)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (!device || !id)
        return rt_set(cudaErrorInvalidValue);
    return rt_set(rt_from(cuDeviceGetByPCIBusId(device, id)));
}

API cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    cudaError_t e = rt_valid_device(peer);
    if (!e && flags)
        e = cudaErrorInvalidValue;
    if (!e)
        e = peer == rt_device() ? cudaErrorInvalidDevice : cudaErrorPeerAccessUnsupported;
    return rt_set(e);
}

API cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
    cudaError_t e = rt_valid_device(peer);
    if (!e)
        e = peer == rt_device() ? cudaErrorInvalidDevice : cudaErrorPeerAccessNotEnabled;
    return rt_set(e);
}

API cudaError_t cudaDeviceGetP2PAttribute(int *value, enum cudaDeviceP2PAttr attr, int src,
                                          int dst)
{
    cudaError_t e = rt_valid_device(src);
    if (!e)
        e = rt_valid_device(dst);
    if (!e && (src == dst))
        e = cudaErrorInvalidDevice;
    if (!e && (!value || attr < cudaDevP2PAttrPerformanceRank
               || attr > cudaDevP2PAttrCudaArrayAccessSupported))
        e = cudaErrorInvalidValue;
    if (!e)
        *value = 0; /* no access, no atomics, no array access; rank 0 */
    return rt_set(e);
}

/* The primary context of device dev (made on first use); the calling thread's device is
 * kept. */
static cudaError_t device_ctx(int dev, CUcontext *ctx)
{
    int cur = rt_device();
    cudaError_t e = dev == cur ? cudaSuccess : cudaSetDevice(dev);
    if (!e)
        e = rt_ctx(ctx);
    if (dev != cur)
        cudaSetDevice(cur);
    return e;
}

/* libcuda's cuMemcpyPeer between the two devices' primary contexts: on one device a
 * device-to-device copy, between two staged through the host. */
static cudaError_t peer_copy(void *dst, int to, const void *src, int from, size_t count,
                             cudaStream_t s, int async)
{
    CUcontext dctx, sctx, cur;
    cudaError_t e = rt_valid_device(to);
    if (!e)
        e = rt_valid_device(from);
    if (e || !count)
        return rt_set(e);
    if (!dst || !src)
        return rt_set(cudaErrorInvalidValue);
    if (async && rt_capturing(s)) {
        if (to == from && to == rt_device()) /* a copy node */
            return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, s);
        return rt_set(cudaErrorStreamCaptureUnsupported); /* not a node this graph can hold */
    }
    if ((e = device_ctx(to, &dctx)) || (e = device_ctx(from, &sctx)) || (e = rt_ctx(&cur)))
        return e;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, h = (CUdeviceptr)(uintptr_t)src;
    return rt_set(rt_from(async ? cuMemcpyPeerAsync(d, dctx, h, sctx, count, s)
                                : cuMemcpyPeer(d, dctx, h, sctx, count)));
}

API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                               size_t count)
{
    return peer_copy(dst, dstDevice, src, srcDevice, count, NULL, 0);
}

API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                    size_t count, cudaStream_t s)
{
    return peer_copy(dst, dstDevice, src, srcDevice, count, s, 1);
}

/* A 3D peer copy: on one device a plain 3D copy; between two, linear memory through
 * libcuda's cuMemcpy3DPeer between the primary contexts (arrays of two devices:
 * cudaErrorNotSupported). */
static cudaError_t peer_copy_3d(const struct cudaMemcpy3DPeerParms *p, cudaStream_t s, int async)
{
    if (!p)
        return rt_set(cudaErrorInvalidValue);
    if (p->srcDevice == p->dstDevice) {
        int cur = rt_device();
        struct cudaMemcpy3DParms c = {.srcArray = p->srcArray, .srcPos = p->srcPos,
                                      .srcPtr = p->srcPtr, .dstArray = p->dstArray,
                                      .dstPos = p->dstPos, .dstPtr = p->dstPtr,
                                      .extent = p->extent, .kind = cudaMemcpyDeviceToDevice};
        cudaError_t e = p->srcDevice == cur ? cudaSuccess : cudaSetDevice(p->srcDevice);
        if (!e)
            e = async ? cudaMemcpy3DAsync(&c, s) : cudaMemcpy3D(&c);
        if (p->srcDevice != cur)
            cudaSetDevice(cur);
        return e;
    }
    if (p->srcArray || p->dstArray)
        return rt_set(cudaErrorNotSupported);
    const struct cudaPitchedPtr *a = &p->srcPtr, *b = &p->dstPtr;
    const struct cudaExtent *x = &p->extent;
    CUcontext from, to;
    cudaError_t e = rt_valid_device(p->srcDevice);
    if (!e)
        e = rt_valid_device(p->dstDevice);
    if (!e && (!a->ptr || !b->ptr || x->width > a->pitch || x->width > b->pitch))
        e = cudaErrorInvalidValue;
    if (!e && async && rt_capturing(s))
        e = cudaErrorStreamCaptureUnsupported; /* not a node this graph can hold */
    if (e || !x->width || !x->height || !x->depth)
        return rt_set(e);
    if ((e = device_ctx(p->dstDevice, &to)) || (e = device_ctx(p->srcDevice, &from)))
        return e;
    CUDA_MEMCPY3D_PEER q = {
        .srcXInBytes = p->srcPos.x, .srcY = p->srcPos.y, .srcZ = p->srcPos.z,
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = (CUdeviceptr)(uintptr_t)a->ptr,
        .srcContext = from, .srcPitch = a->pitch, .srcHeight = a->ysize,
        .dstXInBytes = p->dstPos.x, .dstY = p->dstPos.y, .dstZ = p->dstPos.z,
        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = (CUdeviceptr)(uintptr_t)b->ptr,
        .dstContext = to, .dstPitch = b->pitch, .dstHeight = b->ysize,
        .WidthInBytes = x->width, .Height = x->height, .Depth = x->depth};
    return rt_set(rt_from(async ? cuMemcpy3DPeerAsync(&q, s) : cuMemcpy3DPeer(&q)));
}

API cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms *p)
{
    return peer_copy_3d(p, NULL, 0);
}

API cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t s)
{
    return peer_copy_3d(p, s, 1);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaMemcpy3DPeerAsync) RT_PTDS(cudaMemcpy3DPeer)
