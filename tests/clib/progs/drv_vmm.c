/* CUDA's virtual memory management through libcuda.so.1, in the style of the CUDA sample
 * vectorAddMMAP: a VA range reserved at the recommended granularity and backed by two
 * allocations mapped end to end, read-write access, vector add (madd's "add" kernel) over
 * vectors of which one straddles the two allocations; the allocations released while mapped
 * (the memory lives until the unmap); CUDA's results for bad arguments; and at last a kernel
 * storing into the reserved but unmapped rest of the range (an illegal address).
 * Usage: drv_vmm MADD_PTX.  Prints one line per step. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

#define N 512u                              /* 512 x 512 uint32: 1 MiB per vector */
#define VEC ((size_t)N * N * sizeof(unsigned))

static const char *name_of(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static int add(CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c)
{
    unsigned n = N;
    void *params[] = {&a, &b, &c, &n};
    CK(cuLaunchKernel(f, N / 16, N / 16, 1, 16, 16, 1, 0, NULL, params, NULL));
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUmemGenericAllocationHandle h[2], again, bad;
    CUdeviceptr va, base;
    size_t gran, min_gran, size, range;
    unsigned long long flags;
    int vmm;

    if (argc < 2)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&f, mod, "add"));

    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CK(cuMemGetAllocationGranularity(&min_gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    size = 2 * gran;                        /* two allocations of 2 MiB: 4 MiB, 3 vectors */
    CK(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));   /* the upper half stays unmapped */
    CK(cuMemCreate(&h[0], size / 2, &prop, 0));
    CK(cuMemCreate(&h[1], size / 2, &prop, 0));
    CK(cuMemMap(va, size / 2, 0, h[0], 0));
    CK(cuMemMap(va + size / 2, size / 2, 0, h[1], 0));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(va, size, &access, 1));
    CK(cuMemGetAccess(&flags, &prop.location, va + size - 1));
    CK(cuMemGetAddressRange(&base, &range, va + size / 2 + 5));
    /* a mapping is no cuMemAlloc allocation: cuMemFree refuses it and forgets nothing */
    EXPECT(cuMemFree(va + size / 2) == CUDA_ERROR_INVALID_VALUE);
    CK(cuMemGetAddressRange(&base, &range, va + size / 2 + 5));
    unsigned mtype = 0;
    CK(cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va + size - 1));
    EXPECT(mtype == CU_MEMORYTYPE_DEVICE);
    void *fn[3];
    CUdriverProcAddressQueryResult found;
    CK(cuGetProcAddress("cuMemCreate", &fn[0], 12000, 0, &found));
    CK(cuGetProcAddress("cuMemMap", &fn[1], 12000, 0, &found));
    CK(cuGetProcAddress("cuMemImportFromShareableHandle", &fn[2], 12000, 0, &found));
    printf("vmm supported=%d granularity=%zu/%zu access=%llu range_ok=%d procs=%d\n", vmm,
           min_gran, gran, flags, base == va + size / 2 && range == size / 2,
           fn[0] == (void *)cuMemCreate && fn[1] == (void *)cuMemMap &&
           fn[2] == (void *)cuMemImportFromShareableHandle);

    /* a at 0, b at 1.5 MiB (across the seam at 2 MiB), c at 2.5 MiB */
    CUdeviceptr a = va, b = va + 3 * VEC / 2, c = va + 5 * VEC / 2;
    unsigned *ha = malloc(VEC), *hb = malloc(VEC), *hc = malloc(VEC);
    for (unsigned i = 0; i < N * N; i++) {
        ha[i] = i * 7u + 3u;
        hb[i] = i ^ 0x5a5au;
    }
    CK(cuMemcpyHtoD(a, ha, VEC));
    CK(cuMemcpyHtoD(b, hb, VEC));
    CK(cuMemsetD32(c, 0xdeadbeefu, N * N));
    if (add(f, a, b, c))
        return 1;
    CK(cuCtxSynchronize());
    CK(cuMemRelease(h[0]));                 /* mapped: the memory stays */
    CK(cuMemRelease(h[1]));
    CK(cuMemcpyDtoH(hc, c, VEC));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N * N; i++)
        wrong += hc[i] != ha[i] + hb[i];
    CK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 4096)));
    printf("vector add over two allocations: wrong=%u retained=%d\n", wrong, again != 0);
    CK(cuMemRelease(again));

    /* an allocation for device 1 while device 0's context is current: the library holds it
     * in device 1's holder handle and maps it here by exporting and importing it */
    CUmemGenericAllocationHandle far;
    CUdeviceptr there;
    unsigned word = 0;
    prop.location.id = 1;
    CK(cuMemCreate(&far, gran, &prop, 0));
    prop.location.id = dev;
    CK(cuMemAddressReserve(&there, gran, 0, 0, 0));
    CK(cuMemMap(there, gran, 0, far, 0));
    CK(cuMemRelease(far));
    CK(cuMemSetAccess(there, gran, &access, 1));
    CK(cuMemsetD32(there, 0x600du, gran / 4));
    CK(cuMemcpyDtoH(&word, there + gran - 4, 4));
    CK(cuMemUnmap(there, gran));
    CK(cuMemAddressFree(there, gran));
    printf("other device's allocation mapped here: %s\n", word == 0x600du ? "ok" : "wrong");

    /* CUDA's results for bad arguments */
    CUdeviceptr other;
    CK(cuMemAddressReserve(&other, gran, 0, 0, 0));
    printf("refused create_size=%s map_handle=%s map_released=%s free_mapped=%s",
           name_of(cuMemCreate(&bad, 1000, &prop, 0)),
           name_of(cuMemMap(other, gran, 0, 0xdeadbeefull, 0)),
           name_of(cuMemMap(va, gran, 0, again, 0)),
           name_of(cuMemAddressFree(va, 2 * size)));
    prop.location.id = dev + 1000;
    printf(" device=%s", name_of(cuMemCreate(&bad, gran, &prop, 0)));
    prop.location.id = dev;
    printf(" share=%s copy_unmapped=%s\n", name_of(cuMemCreate(&bad, 1ull << 40, &prop, 0)),
           name_of(cuMemcpyHtoD(va + size, ha, 64)));
    CK(cuMemAddressFree(other, gran));

    /* a kernel storing into the unmapped upper half faults, and the context is lost */
    if (add(f, a, b, va + size + VEC / 2))
        return 1;
    CUresult fault = cuCtxSynchronize();
    printf("unmapped store=%s sticky=%s\n", name_of(fault), name_of(cuCtxSynchronize()));
    CK(cuCtxDestroy(ctx));
    free(ha);
    free(hb);
    free(hc);
    return 0;
}
