/* Pointer attributes, registered host memory and memory pools of the driver API (linked
 * with gdev-py's libcuda.so.1): the attributes of device, pinned, managed, registered and
 * unknown memory; registering, its flags and errors; stream-ordered allocation from the
 * default pool and from a created one, its accounting, maxSize and access.  Prints
 * "drv_pointers ok" on success; the first failure names its line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

static int attributes(CUcontext ctx)
{
    CUdeviceptr d, m, got = 0, start = 0;
    void *pinned, *hp = NULL;
    unsigned type = 0, managed = 7, sync = 1;
    unsigned long long id1 = 0, id2 = 0;
    size_t size = 0;
    CUcontext owner = NULL;
    CK(cuMemAlloc(&d, 1000));
    CK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
    CK(cuMemHostAlloc(&pinned, 8192, CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 10));
    EXPECT(type == CU_MEMORYTYPE_DEVICE);
    CK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    EXPECT(owner == ctx);
    CK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 999));
    CK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 999));
    EXPECT(start == d && size == 1000);
    CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
    EXPECT(managed == 0);
    EXPECT(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d) ==
           CUDA_ERROR_INVALID_VALUE);
    CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    CK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, m));
    EXPECT(managed == 1 && hp == (void *)(uintptr_t)m);
    CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned));
    CK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)pinned));
    CUdeviceptr mapped;
    CK(cuMemHostGetDevicePointer(&mapped, pinned, 0));
    EXPECT(type == CU_MEMORYTYPE_HOST && got == mapped);
    unsigned flags = 0;
    CK(cuMemHostGetFlags(&flags, pinned));
    EXPECT(flags & CU_MEMHOSTALLOC_DEVICEMAP);
    /* buffer ids differ; SYNC_MEMOPS is kept */
    CK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, d));
    CK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, m));
    EXPECT(id1 && id2 && id1 != id2);
    CK(cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    sync = 0;
    CK(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    EXPECT(sync == 1);
    EXPECT(cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) ==
           CUDA_ERROR_INVALID_VALUE);
    /* unknown memory: an error alone, zeros among several */
    static char plain[64];
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)plain) ==
           CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute ids[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    type = 9, managed = 9, owner = ctx;
    void *out[3] = {&type, &owner, &managed};
    CK(cuPointerGetAttributes(3, ids, out, (CUdeviceptr)plain));
    EXPECT(type == 0 && owner == NULL && managed == 0);
    CK(cuPointerGetAttributes(3, ids, out, m));
    EXPECT(type == CU_MEMORYTYPE_DEVICE && owner == ctx && managed == 1);
    CK(cuMemFree(d));
    CK(cuMemFree(m));
    CK(cuMemFreeHost(pinned));
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) ==
           CUDA_ERROR_INVALID_VALUE);
    return 0;
}

/* Managed memory's hints, per page, said back by the range attributes. */
static int ranges(CUdevice dev)
{
    CUdeviceptr m;
    int mostly = 9, where = 9, by[3] = {9, 9, 9}, type = 9, id = 9;
    CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    CK(cuMemAllocManaged(&m, 4 * 4096, CU_MEM_ATTACH_GLOBAL));
    CK(cuMemRangeGetAttribute(&mostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4 * 4096));
    CK(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4096));
    EXPECT(mostly == 0 && where == CU_DEVICE_INVALID);
    CK(cuMemAdvise(m, 2 * 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu));
    CK(cuMemAdvise(m, 4 * 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu));
    CK(cuMemAdvise(m + 4096, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, host));
    CK(cuMemAdvise(m + 4096, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu));
    CK(cuMemRangeGetAttribute(&mostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 2 * 4096));
    EXPECT(mostly == 1);
    CK(cuMemRangeGetAttribute(&mostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 3 * 4096));
    EXPECT(mostly == 0);
    CK(cuMemRangeGetAttribute(by, sizeof by, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m + 4096, 10));
    EXPECT(by[0] == dev && by[1] == CU_DEVICE_CPU && by[2] == CU_DEVICE_INVALID);
    CK(cuMemPrefetchAsync(m + 2 * 4096, 4096, host, 0, NULL));
    CUmem_range_attribute ids[3] = {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                                    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                                    CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID};
    void *out[3] = {&where, &type, &id};
    size_t sizes[3] = {4, 4, 4};
    CK(cuMemRangeGetAttributes(out, sizes, ids, 3, m + 2 * 4096, 4096));
    EXPECT(where == dev && type == CU_MEM_LOCATION_TYPE_HOST && id == dev);
    CK(cuMemAdvise(m + 4096, 4096, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, gpu));
    CK(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 3 * 4096));
    EXPECT(where == CU_DEVICE_INVALID); /* the pages differ */
    EXPECT(cuMemRangeGetAttribute(&where, 2, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4) ==
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 5 * 4096) ==
           CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFree(m));
    return 0;
}

static int registered(void)
{
    size_t n = 3 * 4096;
    unsigned char *buf = aligned_alloc(4096, n), back[64];
    unsigned flags = 0, type = 0;
    CUdeviceptr d, dp;
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)i;
    const char *name = NULL;
    CK(cuMemHostRegister(buf, n, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT(cuMemHostRegister(buf + 4096, 10, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT(cuMemHostRegister(buf + n - 1, 4096, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CK(cuGetErrorName(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, &name));
    EXPECT(!strcmp(name, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"));
    CK(cuMemHostGetFlags(&flags, buf + 5));
    EXPECT(flags == CU_MEMHOSTREGISTER_PORTABLE);
    CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(buf + 8)));
    EXPECT(type == CU_MEMORYTYPE_HOST);
    EXPECT(cuMemHostGetDevicePointer(&dp, buf, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CK(cuMemAlloc(&d, 64));
    CK(cuMemcpyHtoD(d, buf + 100, 64)); /* copies of registered memory work as any */
    CK(cuMemcpyDtoH(back, d, 64));
    EXPECT(!memcmp(back, buf + 100, 64));
    EXPECT(cuMemHostUnregister(buf + 1) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CK(cuMemHostUnregister(buf));
    EXPECT(cuMemHostUnregister(buf) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT(cuMemHostGetFlags(&flags, buf) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemHostRegister(buf, n, CU_MEMHOSTREGISTER_IOMEMORY) == CUDA_ERROR_NOT_SUPPORTED);
    CK(cuMemFree(d));
    free(buf);
    return 0;
}

static int pools(CUdevice dev, CUstream s)
{
    CUmemoryPool def, cur, mine, owner = NULL;
    CUdeviceptr a, b;
    cuuint64_t used = 0, high = 0, zero = 0;
    int supported = 0;
    CK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev));
    EXPECT(supported == 1);
    CK(cuDeviceGetDefaultMemPool(&def, dev));
    CK(cuDeviceGetMemPool(&cur, dev));
    EXPECT(def == cur);
    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    CK(cuMemGetDefaultMemPool(&cur, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    EXPECT(cur == def);
    EXPECT(cuMemGetMemPool(&cur, &host, CU_MEM_ALLOCATION_TYPE_PINNED) ==
           CUDA_ERROR_NOT_SUPPORTED);
    CK(cuMemAllocAsync(&a, 1 << 20, s));
    CK(cuMemsetD8Async(a, 3, 1 << 20, s));
    CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT(used == 1 << 20);
    CK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    EXPECT(owner == def);
    CK(cuMemFreeAsync(a, s));
    CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    EXPECT(used == 0 && high == 1 << 20);
    CK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    EXPECT(high == 0);
    high = 5;
    EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high) ==
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemPoolDestroy(def) == CUDA_ERROR_INVALID_VALUE);
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
                            .maxSize = 3 << 20};
    CK(cuMemPoolCreate(&mine, &props));
    CK(cuMemSetMemPool(&here, CU_MEM_ALLOCATION_TYPE_PINNED, mine));
    CK(cuMemGetMemPool(&cur, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    EXPECT(cur == mine);
    CK(cuMemAllocAsync(&a, 2 << 20, s));
    EXPECT(cuMemAllocFromPoolAsync(&b, 2 << 20, mine, s) == CUDA_ERROR_OUT_OF_MEMORY);
    CK(cuMemAllocFromPoolAsync(&b, 1 << 20, mine, s));
    CUmemAccess_flags acc;
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CK(cuMemPoolGetAccess(&acc, mine, &loc));
    EXPECT(acc == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUmemAccessDesc none = {.location = loc, .flags = CU_MEM_ACCESS_FLAGS_PROT_NONE};
    EXPECT(cuMemPoolSetAccess(mine, &none, 1) == CUDA_ERROR_NOT_SUPPORTED);
    CK(cuMemFree(a)); /* a pool's block freed the plain way leaves the pool too */
    CK(cuMemFreeAsync(b, s));
    CK(cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT(used == 0);
    CK(cuMemPoolTrimTo(mine, 0));
    CK(cuMemPoolDestroy(mine));
    CK(cuDeviceGetMemPool(&cur, dev));
    EXPECT(cur == def);
    props.handleTypes = CU_MEM_HANDLE_TYPE_WIN32;   /* shared by file descriptors only */
    EXPECT(cuMemPoolCreate(&mine, &props) == CUDA_ERROR_NOT_SUPPORTED);
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  /* drv_pool_ipc.c */
    CK(cuMemPoolCreate(&mine, &props));
    CK(cuMemPoolDestroy(mine));
    return 0;
}

/* What a destroyed context held leaves the records: its pinned buffers, its pools' blocks. */
static int destroyed(CUcontext ctx, CUdevice dev)
{
    CUcontext other;
    CUmemoryPool def;
    CUdeviceptr a;
    void *pinned;
    unsigned type = 0;
    cuuint64_t used = 1;
    CK(cuCtxCreate(&other, NULL, 0, dev));
    CK(cuMemHostAlloc(&pinned, 4096, 0));
    CK(cuDeviceGetDefaultMemPool(&def, dev));
    CK(cuMemAllocAsync(&a, 1 << 16, NULL));
    CK(cuCtxDestroy(other));
    CK(cuCtxSetCurrent(ctx));
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned) ==
           CUDA_ERROR_INVALID_VALUE);
    CK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT(used == 0);
    return 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuStreamCreate(&s, 0));
    if (attributes(ctx) || ranges(dev) || registered() || pools(dev, s) || destroyed(ctx, dev))
        return 1;
    CK(cuStreamDestroy(s));
    CK(cuCtxDestroy(ctx));
    printf("drv_pointers ok\n");
    return 0;
}
