/* CUDA IPC in the runtime: cudaIpc* are libcuda's cuIpc* (cuda/ipc.c) in the current
 * device's primary context; cudaIpcMemHandle_t and cudaIpcEventHandle_t have the driver
 * handles' 64 bytes, and a driver result becomes the runtime's as every call's does
 * (CUDA_ERROR_INVALID_CONTEXT: cudaErrorDeviceUninitialized, "invalid device context"). */
#include <string.h>

#include "cudart_internal.h"

API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    IN_CTX();
    CALL(cuIpcGetMemHandle((CUipcMemHandle *)handle, (CUdeviceptr)devPtr));
}

API cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
                                     unsigned int flags)
{
    CUipcMemHandle h;
    IN_CTX();
    if (!devPtr)
        return rt_set(cudaErrorInvalidValue);
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CUdeviceptr p = 0;
    CUresult r = cuIpcOpenMemHandle(&p, h, flags);
    if (!r)
        *devPtr = (void *)p;
    CALL(r);
}

API cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    IN_CTX();
    CALL(cuIpcCloseMemHandle((CUdeviceptr)devPtr));
}

API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    IN_CTX();
    CALL(cuIpcGetEventHandle((CUipcEventHandle *)handle, event));
}

API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    CUipcEventHandle h;
    IN_CTX();
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CALL(cuIpcOpenEventHandle(event, h));
}
