/* Devices among each other: choosing one, PCI addresses (libcuda's ids.c), peer access and
 * peer copies.  Each vGPU context is its own address space, so no device can map another's
 * memory (cudaDeviceCanAccessPeer is 0, enabling peer access is
 * cudaErrorPeerAccessUnsupported); a copy between devices goes through the host, as CUDA's
 * copies between devices without peer access do. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

#define PEER_CHUNK (1u << 20) /* bytes staged through the host per step */

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

/* Copy count bytes from src on device `from` to dst on device `to` through a host buffer;
 * the calling thread's device is restored. */
static cudaError_t staged(void *dst, int to, const void *src, int from, size_t count)
{
    int cur = rt_device();
    uint8_t *buf = malloc(count < PEER_CHUNK ? count : PEER_CHUNK);
    cudaError_t e = buf ? cudaSuccess : cudaErrorMemoryAllocation;
    for (size_t done = 0; !e && done < count; done += PEER_CHUNK) {
        size_t n = count - done < PEER_CHUNK ? count - done : PEER_CHUNK;
        if (!(e = cudaSetDevice(from)))
            e = cudaMemcpy(buf, (const uint8_t *)src + done, n, cudaMemcpyDeviceToHost);
        if (!e && !(e = cudaSetDevice(to)))
            e = cudaMemcpy((uint8_t *)dst + done, buf, n, cudaMemcpyHostToDevice);
    }
    free(buf);
    cudaSetDevice(cur);
    return e;
}

static cudaError_t peer_copy(void *dst, int to, const void *src, int from, size_t count,
                             cudaStream_t s, int async)
{
    cudaError_t e = rt_valid_device(to);
    if (!e)
        e = rt_valid_device(from);
    if (e || !count)
        return rt_set(e);
    if (!dst || !src)
        return rt_set(cudaErrorInvalidValue);
    if (to == from && to == rt_device()) /* one device: a device-to-device copy */
        return async ? cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, s)
                     : cudaMemcpy(dst, src, count, cudaMemcpyDeviceToDevice);
    if (async && rt_capturing(s))
        return rt_set(cudaErrorStreamCaptureUnsupported); /* not a node this graph can hold */
    if (async && (e = cudaStreamSynchronize(s))) /* in order after the stream's work */
        return e;
    return rt_set(staged(dst, to, src, from, count));
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
