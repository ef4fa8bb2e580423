/* Pointer attributes (cuPointerGetAttribute[s], cuPointerSetAttribute).  A pointer is
 * looked up in the current context's allocations (device and managed memory), then among
 * the process's pinned and registered host ranges (hostmem.c).  Each context is its own
 * address space here, so a device address of another context is not found (as CUDA answers
 * for a pointer it does not know).  Booleans are written as 4-byte integers. */
#include <string.h>

#include "cuda_internal.h"

static unsigned long long next_id;

unsigned long long cu_next_id(void)
{
    return __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
}

int cu_alloc_find(CUcontext c, uint64_t p, struct alloc *out)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs && !found; i++)
        if (p >= c->allocs[i].addr && p - c->allocs[i].addr < c->allocs[i].size) {
            *out = c->allocs[i];
            found = 1;
        }
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* What the driver knows of a pointer. */
struct ptr_info {
    int kind; /* 0 unknown, 1 device, 2 managed, 3 pinned host, 4 registered host */
    CUcontext ctx;
    uint64_t base, size, device_ptr, host_ptr;
    unsigned long long id;
    int sync_memops;
};

static struct ptr_info classify(CUcontext c, CUdeviceptr p)
{
    struct ptr_info i = {0};
    struct alloc a;
    struct cu_host_info h;
    if (cu_alloc_find(c, p, &a)) {
        i = (struct ptr_info){a.managed ? 2 : 1, c, a.addr, a.size, p, a.managed ? p : 0,
                              a.id, a.sync_memops};
    } else if (cu_host_find((void *)(uintptr_t)p, 1, &h)) {
        uint64_t dev = h.registered || h.ctx != c ? 0 : gvirtget(c->h, (void *)(uintptr_t)p);
        i = (struct ptr_info){h.registered ? 4 : 3, h.ctx, (uint64_t)(uintptr_t)h.base, h.size,
                              dev, p, h.id, 1};
    }
    return i;
}

/* Bytes of an attribute's value: pointers, sizes and 64-bit ids, or 4-byte integers. */
static size_t attr_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return 8;
    default:
        return 4;
    }
}

static void put_int(void *data, int v)
{
    memcpy(data, &v, sizeof v);
}

/* One attribute of a known pointer into data: INVALID_VALUE if it has no such value. */
static CUresult attribute(const struct ptr_info *i, CUpointer_attribute attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = i->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        put_int(data, i->kind <= 2 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (!i->device_ptr)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "registered host memory has no device "
                           "pointer here");
        *(CUdeviceptr *)data = i->device_ptr;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!i->host_ptr)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "device memory has no host pointer");
        *(void **)data = (void *)(uintptr_t)i->host_ptr;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: put_int(data, i->sync_memops); break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = i->id; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: put_int(data, i->kind == 2); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: put_int(data, i->ctx->dev); break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data = i->base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = i->size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: put_int(data, 1); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *(unsigned long long *)data = i->id; break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: put_int(data, 0); break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        put_int(data, i->kind == 4 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
                                   : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = i->kind == 1 ? cu_pool_of(i->ctx, i->base) : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "no nv-p2p tokens for the emulated device");
    default:
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "pointer attribute %d", (int)attr);
    }
    return CUDA_SUCCESS;
}

API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    CURRENT(c);
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr_info i = classify(c, p);
    if (!i.kind)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "0x%llx is not memory of the driver",
                       (unsigned long long)p);
    return attribute(&i, attr, data);
}

/* Unlike the single form, an unknown pointer is no error: its attributes read as zero
 * (NULL, 0, false), as CUDA defines. */
API CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                    CUdeviceptr p)
{
    CURRENT(c);
    if (!n || !attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr_info i = classify(c, p);
    for (unsigned k = 0; k < n; k++) {
        if (!data[k])
            return CUDA_ERROR_INVALID_VALUE;
        if (!i.kind || attribute(&i, attrs[k], data[k]) == CUDA_ERROR_INVALID_VALUE)
            memset(data[k], 0, attr_size(attrs[k]));
        if (!i.kind && attrs[k] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            put_int(data[k], 0); /* unregistered host memory: no memory type */
    }
    return CUDA_SUCCESS;
}

/* Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set; the synchronous copies of this driver
 * are done when they return whatever it says, so setting it changes no behaviour. */
API CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr, CUdeviceptr p)
{
    CURRENT(c);
    if (!value || attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuPointerSetAttribute: only SYNC_MEMOPS "
                       "can be set");
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs && !found; i++)
        if (p >= c->allocs[i].addr && p - c->allocs[i].addr < c->allocs[i].size) {
            c->allocs[i].sync_memops = *(const unsigned *)value != 0;
            found = 1;
        }
    pthread_mutex_unlock(&c->lock);
    return found ? CUDA_SUCCESS : cu_fail(CUDA_ERROR_INVALID_VALUE, "cuPointerSetAttribute: "
                                          "0x%llx is no device allocation",
                                          (unsigned long long)p);
}
