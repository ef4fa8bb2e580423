/* CUDA's virtual memory management over libgdev's gvm_* verbs (docs/memory.md): a
 * reservation is a VA range of a context's address space, an allocation
 * (CUmemGenericAllocationHandle) device memory without an address, and a map puts it (or a
 * part) inside a reservation with no access until cuMemSetAccess.  Handles and ranges are
 * the process's, as in CUDA (vmm.h says how they are routed to the Gdev handles that hold
 * them).  Sharing goes through a POSIX file descriptor (cuMemExportToShareableHandle),
 * which another process imports.  Mapped ranges are tracked like cuMemAlloc's allocations,
 * so cuMemGetAddressRange and the runtime's pointer attributes see them as device memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "vmm.h"

#define GRANULARITY 4096ull            /* the emulated GPU's page */
#define RECOMMENDED (2ull << 20)

/* The daemon's -errno (and reason) of a failed verb as CUDA's result. */
static CUresult vm_result(const char *who, int err)
{
    if (!err)
        return CUDA_SUCCESS;
    return cu_fail(cu_error(err), "%s: %s", who, gdev_last_error());
}

/* A location naming device dev (the device of the range it is about). */
static CUresult check_location(CUdevice dev, const CUmemLocation *loc)
{
    if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "memory location: a device only");
    if (loc->id != dev)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "memory location: device %d has no access "
                       "to a range of device %d (contexts do not share address spaces)",
                       loc->id, dev);
    return CUDA_SUCCESS;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "allocation type: CU_MEM_ALLOCATION_TYPE_PINNED");
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "handle types: POSIX file descriptors only");
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "memory location: a device only");
    if (prop->location.id < 0 || prop->location.id >= cu_device_count())
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "memory location: no device %d",
                       prop->location.id);
    return CUDA_SUCCESS;
}


/* A copy of the live allocation record of v (what the daemon calls need), or an error. */
static CUresult alloc_of(const char *who, CUmemGenericAllocationHandle v, struct vmm_alloc *out)
{
    vmm_lock();
    struct vmm_alloc *a = vmm_alloc_of(v);
    if (a)
        *out = *a;
    vmm_unlock();
    if (!a)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: 0x%llx is not an allocation handle", who,
                       (unsigned long long)v);
    if (vmm_dead(out->ctx))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: the context that held allocation "
                       "0x%llx was destroyed", who, (unsigned long long)v);
    return CUDA_SUCCESS;
}

/* A copy of the range containing ptr, or an error; *dead set if its context is gone. */
static CUresult range_of(const char *who, uint64_t ptr, struct vmm_range *out, int *dead)
{
    vmm_lock();
    struct vmm_range *r = vmm_range_of(ptr);
    if (r)
        *out = *r;
    vmm_unlock();
    if (!r)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: 0x%llx is in no reserved range", who,
                       (unsigned long long)ptr);
    *dead = vmm_dead(out->ctx);
    return CUDA_SUCCESS;
}

static CUresult live_range(const char *who, uint64_t ptr, struct vmm_range *out)
{
    int dead;
    CUresult r = range_of(who, ptr, out, &dead);
    if (!r && dead)
        r = cu_fail(CUDA_ERROR_INVALID_CONTEXT, "%s: the context of the range at 0x%llx was "
                    "destroyed", who, (unsigned long long)ptr);
    return r;
}

API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                           CUmemAllocationGranularity_flags option)
{
    if (!cu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = check_prop(prop);
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
    CUcontext c = NULL;
    Ghandle h;
    uint64_t va;
    if (!ptr || flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cu_current(&c) == CUDA_SUCCESS ? CUDA_SUCCESS : vmm_owner(0, &h, &c);
    if (r)
        return r;
    CUdevice dev = c ? c->dev : 0;
    h = c ? c->h : h;
    r = vm_result("cuMemAddressReserve", gvm_reserve(h, size, alignment, addr, &va));
    if (!r)
        r = vmm_range_new(va, size, h, c, dev);
    if (r)
        return r;
    *ptr = va;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    struct vmm_range rg;
    int dead;
    CUresult r = range_of("cuMemAddressFree", ptr, &rg, &dead);
    if (r)
        return r;
    if (rg.va != ptr || rg.size != size)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemAddressFree: 0x%llx+%zu is not a whole "
                       "reserved range", (unsigned long long)ptr, size);
    if (!dead)              /* a destroyed context's ranges went with it */
        r = vm_result("cuMemAddressFree", gvm_free(rg.h, ptr, size));
    if (!r) {
        vmm_lock();
        struct vmm_range *p = vmm_range_of(ptr);
        if (p && p->va == ptr && p->h == rg.h)
            vmm_range_drop(p);
        vmm_unlock();
    }
    return r;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                         const CUmemAllocationProp *prop, unsigned long long flags)
{
    Ghandle h;
    CUcontext c;
    uint64_t mem;
    CUresult r = check_prop(prop);
    if (r)
        return r;
    if (!handle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    r = vmm_owner(prop->location.id, &h, &c);
    if (!r)
        r = vm_result("cuMemCreate", gvm_create(h, size, &mem));
    if (r)
        return r;
    struct vmm_alloc *a = vmm_alloc_new(h, c, mem, prop->location.id);
    if (!a) {
        gvm_release(h, mem);
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate: no host memory");
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
    return CUDA_SUCCESS;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct vmm_alloc a;
    int dead;
    vmm_lock();
    struct vmm_alloc *p = vmm_alloc_of(handle);
    if (p)
        a = *p;
    vmm_unlock();
    if (!p)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemRelease: 0x%llx is not an allocation "
                       "handle", (unsigned long long)handle);
    dead = vmm_dead(a.ctx);  /* its context took the daemon's id with it */
    CUresult r = dead ? CUDA_SUCCESS : vm_result("cuMemRelease", gvm_release(a.h, a.id));
    if (!r) {
        vmm_lock();
        if ((p = vmm_alloc_of(handle)) && --p->refs == 0)
            vmm_alloc_drop(p);
        vmm_unlock();
    }
    return r;
}

/* The daemon's id of allocation a in the Gdev handle of rg: a's own when they are the same
 * handle, else a new one imported there (*temp set: the caller releases it after mapping). */
static CUresult id_in(const struct vmm_alloc *a, const struct vmm_range *rg, uint64_t *id,
                      int *temp)
{
    int fd;
    *temp = a->h != rg->h;
    if (!*temp) {
        *id = a->id;
        return CUDA_SUCCESS;
    }
    CUresult r = vm_result("cuMemMap", gvm_export(a->h, a->id, &fd));
    if (r)
        return r;
    r = vm_result("cuMemMap", gvm_import(rg->h, fd, id));
    close(fd);
    return r;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    struct vmm_alloc a;
    struct vmm_range rg;
    uint64_t id;
    int temp;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = live_range("cuMemMap", ptr, &rg);
    if (!r)
        r = alloc_of("cuMemMap", handle, &a);
    if (!r)
        r = id_in(&a, &rg, &id, &temp);
    if (r)
        return r;
    r = vm_result("cuMemMap", gvm_map(rg.h, ptr, size, offset, id));
    if (temp)
        gvm_release(rg.h, id); /* the mapping holds the memory; a keeps its own id */
    if (!r && rg.ctx)
        cu_track_alloc(rg.ctx, ptr, size, 0);
    return r;
}

/* Forget the tracked mappings inside [ptr, ptr + size) (after the daemon unmapped them). */
static void untrack_range(CUcontext c, uint64_t ptr, uint64_t size)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; c->allocs && i < c->nallocs;) {
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
    struct vmm_range rg;
    int dead;
    CUresult r = range_of("cuMemUnmap", ptr, &rg, &dead);
    if (r || dead)          /* a destroyed context's mappings went with it */
        return r;
    r = vm_result("cuMemUnmap", gvm_unmap(rg.h, ptr, size));
    if (!r && rg.ctx)
        untrack_range(rg.ctx, ptr, size);
    return r;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                            size_t count)
{
    struct vmm_range rg;
    if (!desc || !count)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemSetAccess: no access descriptor");
    CUresult r = live_range("cuMemSetAccess", ptr, &rg);
    for (size_t i = 0; !r && i < count; i++) {
        r = check_location(rg.dev, &desc[i].location);
        if (!r)
            r = vm_result("cuMemSetAccess", gvm_set_access(rg.h, ptr, size, desc[i].flags));
    }
    return r;
}

API CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                            CUdeviceptr ptr)
{
    struct vmm_range rg;
    uint32_t f;
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = live_range("cuMemGetAccess", ptr, &rg);
    if (r)
        return r;
    if (location->id != rg.dev) {   /* another device's contexts cannot reach this range */
        *flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        return CUDA_SUCCESS;
    }
    r = vm_result("cuMemGetAccess", gvm_get_access(rg.h, ptr, &f));
    if (!r)
        *flags = f;
    return r;
}

API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    struct vmm_range rg;
    uint64_t id;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = live_range("cuMemRetainAllocationHandle", (uint64_t)(uintptr_t)addr, &rg);
    if (!r)
        r = vm_result("cuMemRetainAllocationHandle",
                      gvm_retain(rg.h, (uint64_t)(uintptr_t)addr, &id));
    if (r)
        return r;
    vmm_lock();
    struct vmm_alloc *a = vmm_alloc_find(rg.h, id);   /* the program's record: one more ref */
    if (a)
        a->refs++;
    vmm_unlock();
    if (!a)
        a = vmm_alloc_new(rg.h, rg.ctx, id, rg.dev);
    if (!a) {
        gvm_release(rg.h, id);
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemRetainAllocationHandle: no host memory");
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                    CUmemGenericAllocationHandle handle)
{
    struct vmm_alloc a;
    uint64_t size;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = alloc_of("cuMemGetAllocationPropertiesFromHandle", handle, &a);
    if (!r)
        r = vm_result("cuMemGetAllocationPropertiesFromHandle", gvm_size(a.h, a.id, &size));
    if (r)
        return r;
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = a.dev;
    return CUDA_SUCCESS;
}

API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                          CUmemGenericAllocationHandle handle,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags)
{
    struct vmm_alloc a;
    int fd;
    if (!shareableHandle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemExportToShareableHandle: POSIX file "
                       "descriptors only");
    CUresult r = alloc_of("cuMemExportToShareableHandle", handle, &a);
    if (!r)
        r = vm_result("cuMemExportToShareableHandle", gvm_export(a.h, a.id, &fd));
    if (!r)
        *(int *)shareableHandle = fd;
    return r;
}

API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                            void *osHandle,
                                            CUmemAllocationHandleType shHandleType)
{
    CUcontext c = NULL;
    Ghandle h;
    uint64_t mem;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemImportFromShareableHandle: POSIX file "
                       "descriptors only");
    CUresult r = cu_current(&c) == CUDA_SUCCESS ? CUDA_SUCCESS : vmm_owner(0, &h, &c);
    if (r)
        return r;
    CUdevice dev = c ? c->dev : 0;
    h = c ? c->h : h;
    /* CUDA passes the descriptor itself in the pointer-sized argument */
    r = vm_result("cuMemImportFromShareableHandle",
                  gvm_import(h, (int)(intptr_t)osHandle, &mem));
    if (r)
        return r;
    struct vmm_alloc *a = vmm_alloc_new(h, c, mem, dev);
    if (!a) {
        gvm_release(h, mem);
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemImportFromShareableHandle: no host "
                       "memory");
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
    return CUDA_SUCCESS;
}
