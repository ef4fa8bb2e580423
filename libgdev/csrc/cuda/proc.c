/* cuGetProcAddress: entry points by CUDA's base name and the API version the caller was
 * built for, as libcudart and interposers look them up.  Each row is (name, first CUDA
 * version of this form, function); the newest form not newer than the request wins. */
#include <string.h>

#include "cuda_internal.h"

#include <cudaProfiler.h> /* after cuda_internal.h: cuda.h with the deprecated calls */

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cu_device_get_uuid_v1(CUuuid *uuid, CUdevice dev) __asm__("cuDeviceGetUuid");
CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps, size_t *ndeps);
CUresult cu_memcpy_batch_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                            size_t *failIdx, CUstream s) __asm__("cuMemcpyBatchAsync");
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                        unsigned int flags, CUdevice dev);

struct proc {
    const char *name;
    int version;
    void *fn;
};

#define P(name, version) {#name, version, (void *)name}
static const struct proc procs[] = {
    P(cuInit, 2000), P(cuDriverGetVersion, 2020), P(cuGetErrorName, 6000),
    P(cuGetErrorString, 6000), P(cuDeviceGet, 2000), P(cuDeviceGetCount, 2000),
    P(cuDeviceGetName, 2000), P(cuDeviceTotalMem, 3020), P(cuDeviceGetAttribute, 2000),
    P(cuDeviceComputeCapability, 2000),
    {"cuCtxCreate", 3020, (void *)cuCtxCreate_v2}, {"cuCtxCreate", 11040, (void *)cuCtxCreate_v3},
    {"cuCtxCreate", 12050, (void *)cuCtxCreate},
    P(cuCtxDestroy, 4000), P(cuCtxPushCurrent, 4000), P(cuCtxPopCurrent, 4000),
    P(cuCtxGetCurrent, 4000), P(cuCtxSetCurrent, 4000), P(cuCtxGetDevice, 2000),
    P(cuCtxSynchronize, 2000), P(cuCtxGetApiVersion, 3020), P(cuCtxGetCacheConfig, 3020),
    P(cuCtxSetCacheConfig, 3020),
    P(cuMemAlloc, 3020), P(cuMemFree, 3020), P(cuMemGetInfo, 3020),
    P(cuMemGetAddressRange, 3020), P(cuMemAllocHost, 3020), P(cuMemFreeHost, 2000),
    P(cuMemHostAlloc, 2020), P(cuMemHostGetDevicePointer, 3020), P(cuMemAllocManaged, 6000),
    {"cuMemPrefetchAsync", 12020, (void *)cuMemPrefetchAsync_v2},
    {"cuMemAdvise", 12020, (void *)cuMemAdvise_v2}, P(cuStreamAttachMemAsync, 6000),
    P(cuMemcpyHtoD, 3020), P(cuMemcpyDtoH, 3020), P(cuMemcpyDtoD, 3020), P(cuMemcpy, 4000),
    P(cuMemcpyHtoDAsync, 3020), P(cuMemcpyDtoHAsync, 3020), P(cuMemcpyDtoDAsync, 3020),
    P(cuMemcpyAsync, 4000), P(cuMemsetD8, 3020), P(cuMemsetD16, 3020), P(cuMemsetD32, 3020),
    P(cuMemsetD8Async, 3020), P(cuMemsetD16Async, 3020), P(cuMemsetD32Async, 3020),
    P(cuModuleLoad, 2000), P(cuModuleLoadData, 2000), P(cuModuleLoadDataEx, 2010),
    P(cuModuleLoadFatBinary, 2000), P(cuModuleUnload, 2000), P(cuModuleGetFunction, 2000),
    P(cuModuleGetGlobal, 3020), P(cuLaunchKernel, 4000), P(cuFuncGetAttribute, 2020), P(cuFuncGetParamInfo, 12040),
    P(cuFuncSetAttribute, 9000), P(cuFuncSetCacheConfig, 3000), P(cuFuncSetBlockShape, 2000),
    P(cuFuncSetSharedSize, 2000), P(cuParamSetSize, 2000), P(cuParamSeti, 2000),
    P(cuParamSetf, 2000), P(cuParamSetv, 2000), P(cuLaunch, 2000), P(cuLaunchGrid, 2000),
    P(cuLaunchGridAsync, 2000), P(cuStreamCreate, 2000), P(cuStreamCreateWithPriority, 5050),
    P(cuStreamDestroy, 4000), P(cuStreamSynchronize, 2000), P(cuStreamQuery, 2000),
    P(cuStreamWaitEvent, 3020), P(cuEventCreate, 2000), P(cuEventDestroy, 4000),
    P(cuEventRecord, 2000), P(cuEventRecordWithFlags, 11010), P(cuEventQuery, 2000),
    P(cuEventSynchronize, 2000), P(cuEventElapsedTime, 2000),
    P(cuDevicePrimaryCtxRetain, 7000), P(cuDevicePrimaryCtxRelease, 11000),
    P(cuDevicePrimaryCtxGetState, 7000), P(cuDevicePrimaryCtxSetFlags, 11000),
    P(cuDevicePrimaryCtxReset, 11000), P(cuCtxGetFlags, 7000),
    P(cuArrayCreate, 3020), P(cuArrayDestroy, 2000), P(cuArrayGetDescriptor, 3020),
    P(cuMemcpy2D, 3020), P(cuMemcpyHtoA, 3020), P(cuMemcpyAtoH, 3020),
    P(cuSurfObjectCreate, 5000), P(cuSurfObjectDestroy, 5000),
    P(cuSurfObjectGetResourceDesc, 5000), P(cuTexObjectCreate, 5000), P(cuTexObjectDestroy, 5000),
    P(cuTexObjectGetResourceDesc, 5000), P(cuTexObjectGetTextureDesc, 5000),
    P(cuFuncGetName, 12030), P(cuDeviceGetPCIBusId, 4010), P(cuDeviceGetTexture1DLinearMaxWidth, 11010),
    P(cuDeviceGetByPCIBusId, 4010),
    P(cuGetProcAddress, 12000),
    P(cuLinkCreate, 6050), P(cuLinkAddData, 6050), P(cuLinkAddFile, 6050),
    P(cuLinkComplete, 5050), P(cuLinkDestroy, 5050),
    /* virtual memory management (vmm.c) */
    P(cuMemGetAllocationGranularity, 10020), P(cuMemAddressReserve, 10020),
    P(cuMemAddressFree, 10020), P(cuMemCreate, 10020), P(cuMemRelease, 10020),
    P(cuMemMap, 10020), P(cuMemUnmap, 10020), P(cuMemSetAccess, 10020),
    P(cuMemGetAccess, 10020), P(cuMemRetainAllocationHandle, 11000),
    P(cuMemGetAllocationPropertiesFromHandle, 10020), P(cuMemExportToShareableHandle, 10020),
    P(cuMemImportFromShareableHandle, 10020),
    /* CUDA IPC (ipc.c) */
    P(cuIpcGetMemHandle, 4010), {"cuIpcOpenMemHandle", 11000, (void *)cuIpcOpenMemHandle_v2},
    P(cuIpcCloseMemHandle, 4010), P(cuIpcGetEventHandle, 4010), P(cuIpcOpenEventHandle, 4010),
    /* drvapi: memory and copies (copy2d.c, memset.c, hostmem.c, pointer.c, pool.c, peer.c) */
    P(cuMemAllocPitch, 3020), P(cuMemsetD2D8, 3020), P(cuMemsetD2D16, 3020),
    P(cuMemsetD2D32, 3020), P(cuMemsetD2D8Async, 3020), P(cuMemsetD2D16Async, 3020),
    P(cuMemsetD2D32Async, 3020), P(cuMemcpy2DAsync, 3020), P(cuMemcpy2DUnaligned, 3020),
    P(cuMemcpy3D, 3020), P(cuMemcpy3DAsync, 3020), P(cuArray3DCreate, 3020),
    P(cuArray3DGetDescriptor, 3020), P(cuMipmappedArrayCreate, 5000),
    P(cuMipmappedArrayGetLevel, 5000), P(cuMipmappedArrayDestroy, 5000), P(cuMemcpyDtoA, 3020), P(cuMemcpyAtoD, 3020),
    P(cuMemcpyAtoA, 3020), P(cuMemcpyHtoAAsync, 3020), P(cuMemcpyAtoHAsync, 3020),
    P(cuMemcpyPeer, 4000), P(cuMemcpyPeerAsync, 4000), P(cuMemcpy3DPeer, 4000),
    {"cuMemcpyBatchAsync", 12080, (void *)cu_memcpy_batch_v1},
    {"cuMemcpyBatchAsync", 13000, (void *)cuMemcpyBatchAsync_v2},
    P(cuMemcpy3DPeerAsync, 4000), P(cuPointerGetAttribute, 4000),
    P(cuPointerGetAttributes, 7000), P(cuPointerSetAttribute, 6000),
    P(cuMemHostRegister, 6050), P(cuMemHostUnregister, 4000), P(cuMemHostGetFlags, 2030),
    P(cuMemAllocAsync, 11020), P(cuMemFreeAsync, 11020), P(cuMemAllocFromPoolAsync, 11020),
    P(cuMemPoolCreate, 11020), P(cuMemPoolDestroy, 11020), P(cuMemPoolTrimTo, 11020),
    P(cuMemPoolSetAttribute, 11020), P(cuMemPoolGetAttribute, 11020),
    P(cuMemPoolSetAccess, 11020), P(cuMemPoolGetAccess, 11020),
    P(cuMemPoolExportToShareableHandle, 11020), P(cuMemPoolImportFromShareableHandle, 11020),
    P(cuMemPoolExportPointer, 11020), P(cuMemPoolImportPointer, 11020),
    P(cuDeviceGetDefaultMemPool, 11020), P(cuDeviceGetMemPool, 11020),
    P(cuDeviceSetMemPool, 11020), P(cuDeviceCanAccessPeer, 4000),
    P(cuCtxEnablePeerAccess, 4000), P(cuCtxDisablePeerAccess, 4000),
    P(cuDeviceGetP2PAttribute, 8000), P(cuLaunchCooperativeKernel, 9000),
    P(cuLaunchKernelEx, 11060), P(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050),
    P(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000),
    /* drvapi: streams, contexts, devices, functions (streamops.c, streaminfo.c, ctxinfo.c,
     * funcinfo.c) */
    P(cuLaunchHostFunc, 10000), P(cuStreamAddCallback, 5000), P(cuStreamGetFlags, 5050),
    P(cuStreamGetPriority, 5050), P(cuStreamGetCtx, 9020), {"cuStreamGetCtx", 12050, (void *)cuStreamGetCtx_v2},
    P(cuStreamGetId, 12000), P(cuStreamGetDevice, 12080), P(cuStreamGetAttribute, 11000),
    P(cuStreamSetAttribute, 11000), P(cuStreamCopyAttributes, 11000),
    P(cuStreamWaitValue32, 11070), P(cuStreamWaitValue64, 11070),
    P(cuStreamWriteValue32, 11070), P(cuStreamWriteValue64, 11070),
    P(cuStreamBatchMemOp, 11070), P(cuCtxGetLimit, 3010), P(cuCtxSetLimit, 3010),
    P(cuCtxGetStreamPriorityRange, 5050), P(cuCtxGetId, 12000), P(cuCtxSetFlags, 12010),
    P(cuCtxRecordEvent, 12050), P(cuCtxWaitEvent, 12050), P(cuCtxGetSharedMemConfig, 4020),
    P(cuCtxSetSharedMemConfig, 4020), P(cuCtxResetPersistingL2Cache, 11000),
    {"cuDeviceGetUuid", 9020, (void *)cu_device_get_uuid_v1},
    {"cuDeviceGetUuid", 11040, (void *)cuDeviceGetUuid}, P(cuDeviceGetLuid, 10000),
    P(cuDeviceGetProperties, 2000), P(cuFuncGetModule, 11000), P(cuFuncIsLoaded, 12040),
    P(cuFuncLoad, 12040), P(cuModuleGetFunctionCount, 12040),
    P(cuModuleEnumerateFunctions, 12040), P(cuModuleGetLoadingMode, 11070),
    P(cuOccupancyMaxPotentialBlockSize, 6050), P(cuOccupancyMaxPotentialBlockSizeWithFlags, 7000),
    P(cuOccupancyAvailableDynamicSMemPerBlock, 10020), P(cuProfilerStart, 4000),
    P(cuProfilerStop, 4000), {"cuCtxGetDevice", 13000, (void *)cuCtxGetDevice_v2},
    {"cuCtxSynchronize", 13000, (void *)cuCtxSynchronize_v2},
    /* drvapi: context-independent loading (library.c, kernel.c) */
    P(cuLibraryLoadData, 12000), P(cuLibraryLoadFromFile, 12000), P(cuLibraryUnload, 12000),
    P(cuLibraryGetKernel, 12000), P(cuLibraryGetKernelCount, 12040),
    P(cuLibraryEnumerateKernels, 12040), P(cuLibraryGetModule, 12000),
    P(cuLibraryGetGlobal, 12000), P(cuLibraryGetManaged, 12000),
    P(cuKernelGetFunction, 12000), P(cuKernelGetAttribute, 12000),
    P(cuKernelSetAttribute, 12000), P(cuKernelSetCacheConfig, 12000),
    P(cuKernelGetName, 12030), P(cuKernelGetParamInfo, 12040), P(cuKernelGetLibrary, 12050),
    P(cuMemRangeGetAttribute, 8000), P(cuMemRangeGetAttributes, 8000),
    P(cuLibraryGetUnifiedFunction, 12000), P(cuMemGetDefaultMemPool, 13000),
    P(cuMemGetMemPool, 13000), P(cuMemSetMemPool, 13000), P(cuFuncSetSharedMemConfig, 4020),
    /* legacy.c */
    P(cuCtxAttach, 2000), P(cuCtxDetach, 2000), P(cuModuleGetTexRef, 2000),
    P(cuModuleGetSurfRef, 3000), P(cuSurfRefSetArray, 3000), P(cuSurfRefGetArray, 3000),
    P(cuTexRefCreate, 2000), P(cuTexRefDestroy, 2000), P(cuParamSetTexRef, 2000),
    P(cuTexRefSetArray, 2000), P(cuTexRefGetArray, 2000), P(cuTexRefSetAddress, 3020),
    P(cuTexRefGetAddress, 3020), P(cuTexRefSetAddress2D, 4010), P(cuTexRefSetFormat, 2000),
    P(cuTexRefGetFormat, 2000), P(cuTexRefSetAddressMode, 2000),
    P(cuTexRefGetAddressMode, 2000), P(cuTexRefSetFilterMode, 2000),
    P(cuTexRefGetFilterMode, 2000), P(cuTexRefSetFlags, 2000), P(cuTexRefGetFlags, 2000),
    P(cuTexRefSetBorderColor, 8000), P(cuTexRefGetBorderColor, 8000),
    P(cuTexRefSetMaxAnisotropy, 5000), P(cuTexRefGetMaxAnisotropy, 5000),
    P(cuGraphicsUnregisterResource, 3000), P(cuGraphicsResourceSetMapFlags, 3000),
    P(cuGraphicsMapResources, 3000), P(cuGraphicsUnmapResources, 3000),
    P(cuGraphicsResourceGetMappedPointer, 3020), P(cuGraphicsSubResourceGetMappedArray, 3000),
    P(cuGetExportTable, 3000),
    /* capture.c: no stream is ever capturing; graphs are gdev-py's runtime's.  Not the forms
     * CUDA 13 dropped (cuStreamGetCaptureInfo and cuStreamBeginCapture of CUDA 10.0/10.1):
     * NVIDIA's static runtime takes a driver that has them for an old one and stops. */
    P(cuStreamIsCapturing, 10000),
    {"cuStreamGetCaptureInfo", 11030, (void *)cuStreamGetCaptureInfo_v2},
    {"cuStreamGetCaptureInfo", 12030, (void *)cuStreamGetCaptureInfo_v3},
    P(cuThreadExchangeStreamCaptureMode, 10010),
    {"cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2}, P(cuGraphCreate, 10000),
    /* CUDA 7's forms, which NVIDIA's static runtime asks for (cudaDeviceReset): the same
     * calls (the CUDA 11 _v2 forms changed no parameter) */
    {"cuDevicePrimaryCtxRelease", 7000, (void *)cuDevicePrimaryCtxRelease},
    {"cuDevicePrimaryCtxReset", 7000, (void *)cuDevicePrimaryCtxReset},
    {"cuDevicePrimaryCtxSetFlags", 7000, (void *)cuDevicePrimaryCtxSetFlags},
};
#undef P

static CUresult lookup(const char *symbol, void **pfn, int version,
                       CUdriverProcAddressQueryResult *status)
{
    const struct proc *best = NULL;
    int found = 0;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol))
            continue;
        found = 1;
        if (procs[i].version <= version && (!best || procs[i].version > best->version))
            best = &procs[i];
    }
    *pfn = best ? best->fn : NULL;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                       : found ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                               : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                              CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)flags; /* per-thread default stream forms are the same functions here */
    return lookup(symbol, pfn, cudaVersion, symbolStatus);
}

/* CUDA 11's four-argument form keeps the plain name. */
API CUresult cu_get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags) __asm__("cuGetProcAddress");
API CUresult cu_get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
    (void)flags;
    return lookup(symbol, pfn, cudaVersion, NULL);
}
