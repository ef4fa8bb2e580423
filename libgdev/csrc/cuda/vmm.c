/* CUDA's virtual memory management over libgdev's gvm_* verbs (docs/memory.md): a
 * reservation is a VA range of the current context's address space, an allocation
 * (CUmemGenericAllocationHandle) device memory of that context without an address, and a
 * map puts it (or a part) inside a reservation with no access until cuMemSetAccess.  An
 * allocation handle is the daemon's id in the context that was current when it was made
 * (created, retained or imported): use it with that context current.  Sharing goes through
 * a POSIX file descriptor (cuMemExportToShareableHandle), which another process imports.
 * Mapped ranges are tracked like cuMemAlloc's allocations, so cuMemGetAddressRange and the
 * runtime's pointer attributes see them as device memory. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"

#define GRANULARITY 4096ull            /* the emulated GPU's page */
#define RECOMMENDED (2ull << 20)

#define CURRENT(c) CUcontext c = NULL; do { CUresult r_ = cu_current(&c); if (r_) return r_; } while (0)

/* The daemon's -errno (and reason) of a failed verb as CUDA's result. */
static CUresult vm_result(const char *who, int err)
{
    if (!err)
        return CUDA_SUCCESS;
    return cu_fail(cu_error(err), "%s: %s", who, gdev_last_error());
}

/* A location on the current context's device: SUCCESS, else why not. */
static CUresult check_location(CUcontext c, const CUmemLocation *loc)
{
    if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "memory location: a device only");
    if (loc->id != c->dev)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "memory location: device %d is not the "
                       "current context's (%d)", loc->id, c->dev);
    return CUDA_SUCCESS;
}

static CUresult check_prop(CUcontext c, const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "allocation type: CU_MEM_ALLOCATION_TYPE_PINNED");
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "handle types: POSIX file descriptors only");
    return check_location(c, &prop->location);
}

API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                           CUmemAllocationGranularity_flags option)
{
    CURRENT(c);
    CUresult r = check_prop(c, prop);
    if (r)
        return r;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = option == CU_MEM_ALLOC_GRANULARITY_MINIMUM ? GRANULARITY : RECOMMENDED;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                 CUdeviceptr addr, unsigned long long flags)
{
    uint64_t va;
    CURRENT(c);
    if (!ptr || flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = vm_result("cuMemAddressReserve", gvm_reserve(c->h, size, alignment, addr, &va));
    if (!r)
        *ptr = va;
    return r;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CURRENT(c);
    return vm_result("cuMemAddressFree", gvm_free(c->h, ptr, size));
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                         const CUmemAllocationProp *prop, unsigned long long flags)
{
    uint64_t mem;
    CURRENT(c);
    CUresult r = check_prop(c, prop);
    if (r)
        return r;
    if (!handle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    r = vm_result("cuMemCreate", gvm_create(c->h, size, &mem));
    if (!r)
        *handle = mem;
    return r;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CURRENT(c);
    return vm_result("cuMemRelease", gvm_release(c->h, handle));
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CURRENT(c);
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = vm_result("cuMemMap", gvm_map(c->h, ptr, size, offset, handle));
    if (!r)
        cu_track_alloc(c, ptr, size, 0);
    return r;
}

/* Forget the tracked mappings inside [ptr, ptr + size) (after the daemon unmapped them). */
static void untrack_range(CUcontext c, uint64_t ptr, uint64_t size)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nallocs;) {
        struct alloc a = c->allocs[i];
        if (!a.managed && a.addr >= ptr && a.addr - ptr < size)
            c->allocs[i] = c->allocs[--c->nallocs];
        else
            i++;
    }
    pthread_mutex_unlock(&c->lock);
}

API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CURRENT(c);
    CUresult r = vm_result("cuMemUnmap", gvm_unmap(c->h, ptr, size));
    if (!r)
        untrack_range(c, ptr, size);
    return r;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                            size_t count)
{
    CURRENT(c);
    if (!desc || !count)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemSetAccess: no access descriptor");
    for (size_t i = 0; i < count; i++) {
        CUresult r = check_location(c, &desc[i].location);
        if (!r)
            r = vm_result("cuMemSetAccess", gvm_set_access(c->h, ptr, size, desc[i].flags));
        if (r)
            return r;
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                            CUdeviceptr ptr)
{
    uint32_t f;
    CURRENT(c);
    CUresult r = check_location(c, location);
    if (r)
        return r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    r = vm_result("cuMemGetAccess", gvm_get_access(c->h, ptr, &f));
    if (!r)
        *flags = f;
    return r;
}

API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    uint64_t mem;
    CURRENT(c);
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = vm_result("cuMemRetainAllocationHandle",
                           gvm_retain(c->h, (uint64_t)(uintptr_t)addr, &mem));
    if (!r)
        *handle = mem;
    return r;
}

API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                    CUmemGenericAllocationHandle handle)
{
    uint64_t size;
    CURRENT(c);
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = vm_result("cuMemGetAllocationPropertiesFromHandle",
                           gvm_size(c->h, handle, &size));
    if (r)
        return r;
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = c->dev;
    return CUDA_SUCCESS;
}

API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                          CUmemGenericAllocationHandle handle,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags)
{
    int fd;
    CURRENT(c);
    if (!shareableHandle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemExportToShareableHandle: POSIX file "
                       "descriptors only");
    CUresult r = vm_result("cuMemExportToShareableHandle", gvm_export(c->h, handle, &fd));
    if (!r)
        *(int *)shareableHandle = fd;
    return r;
}

API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                            void *osHandle,
                                            CUmemAllocationHandleType shHandleType)
{
    uint64_t mem;
    CURRENT(c);
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemImportFromShareableHandle: POSIX file "
                       "descriptors only");
    /* CUDA passes the descriptor itself in the pointer-sized argument */
    int fd = (int)(intptr_t)osHandle;
    CUresult r = vm_result("cuMemImportFromShareableHandle", gvm_import(c->h, fd, &mem));
    if (!r)
        *handle = mem;
    return r;
}
