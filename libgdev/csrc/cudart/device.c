/* Devices, the primary contexts (one per device, created on first use, as the runtime
 * does), errors (the thread's last error, sticky until read) and versions. */
#include <stdio.h>
#include <string.h>

#include "cudart_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MAX_DEVICES];
static int initialized;
static _Thread_local int device;
static _Thread_local cudaError_t last_error;

cudaError_t rt_set(cudaError_t err)
{
    if (err)
        last_error = err;
    return err;
}

cudaError_t rt_from(CUresult r)
{
    /* the runtime's numbers equal the driver's for every result libcuda returns, except: */
    switch (r) {
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    default: return (cudaError_t)r;
    }
}

int rt_device(void)
{
    return device;
}

static cudaError_t init(void)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    if (!initialized) {
        CUresult r = cuInit(0);
        if (r == CUDA_SUCCESS)
            initialized = 1;
        else
            e = r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : rt_from(r);
    }
    pthread_mutex_unlock(&lock);
    return e;
}

static cudaError_t bind_primary(CUcontext cur, CUcontext *ctx);

/* 1 if c is one of the runtime's primary contexts (the current device's, tested first). */
static int is_primary(CUcontext c)
{
    pthread_mutex_lock(&lock);
    int found = primary[device] == c;
    for (int i = 0; i < MAX_DEVICES && !found; i++)
        found = primary[i] == c;
    pthread_mutex_unlock(&lock);
    return found;
}

/* The runtime works in the context current to the thread when the program made one current
 * through the driver (CUDA's interplay of the two APIs), else in the current device's
 * primary context, made current. */
cudaError_t rt_ctx(CUcontext *ctx)
{
    CUcontext cur = NULL;
    CUdevice dev;
    cudaError_t e = init();
    if (e)
        return rt_set(e);
    if (!cuCtxGetCurrent(&cur) && cur && !is_primary(cur) && !cuCtxGetDevice(&dev)) {
        device = dev;
        *ctx = cur;
        return cudaSuccess;
    }
    return bind_primary(cur, ctx);
}

/* The current device's primary context, created on first use, made current if cur (the
 * thread's current context) is not it. */
static cudaError_t bind_primary(CUcontext cur, CUcontext *ctx)
{
    pthread_mutex_lock(&lock);
    if (!primary[device]) {
        CUresult r = cuCtxCreate(&primary[device], NULL, 0, device);
        if (r) {
            pthread_mutex_unlock(&lock);
            return rt_set(rt_from(r));
        }
    }
    *ctx = primary[device];
    pthread_mutex_unlock(&lock);
    if (cur != *ctx)
        cuCtxSetCurrent(*ctx);
    return cudaSuccess;
}

API cudaError_t cudaGetDeviceCount(int *count)
{
    cudaError_t e = init();
    if (e)
        return rt_set(e);
    return rt_set(rt_from(cuDeviceGetCount(count)));
}

API cudaError_t cudaSetDevice(int dev)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (dev < 0 || dev >= n || dev >= MAX_DEVICES)
        return rt_set(cudaErrorInvalidDevice);
    device = dev;
    CUcontext ctx, cur = NULL; /* as CUDA 12: the device's primary context made current */
    cuCtxGetCurrent(&cur);
    return bind_primary(cur, &ctx);
}

API cudaError_t cudaGetDevice(int *dev)
{
    if (!dev)
        return rt_set(cudaErrorInvalidValue);
    *dev = device;
    return cudaSuccess;
}

/* The devices to try, in order, for the thread's implicit context: every device works here,
 * so the first of the list becomes the thread's device (each entry is checked). */
API cudaError_t cudaSetValidDevices(int *devs, int len)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (len < 0 || (len && !devs))
        return rt_set(cudaErrorInvalidValue);
    for (int i = 0; i < len; i++)
        for (int j = 0; j <= i; j++)
            if (devs[i] < 0 || devs[i] >= n || (j < i && devs[j] == devs[i]))
                return rt_set(devs[i] < 0 || devs[i] >= n ? cudaErrorInvalidDevice
                                                          : cudaErrorInvalidValue);
    return len ? cudaSetDevice(devs[0]) : cudaSuccess;
}

API cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    return cudaSuccess;
}

API cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config)
{
    (void)config;
    return cudaSuccess;
}

API cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache config)
{
    (void)func, (void)config;
    return cudaSuccess;
}

API cudaError_t cudaDeviceSynchronize(void)
{
    CUcontext ctx;
    cudaError_t e = rt_ctx(&ctx);
    if (e)
        return e;
    e = rt_set(rt_from(cuCtxSynchronize()));
    rt_managed_pull();
    return e;
}

API cudaError_t cudaThreadSynchronize(void)
{
    return cudaDeviceSynchronize();
}

API cudaError_t cudaDeviceReset(void)
{
    CUcontext ctx = NULL;
    pthread_mutex_lock(&lock);
    ctx = primary[device];
    primary[device] = NULL;
    pthread_mutex_unlock(&lock);
    if (ctx) {
        rt_managed_pull(); /* the host keeps the last values of __managed__ variables */
        rt_forget_device(device);
        rt_managed_forget();
        cuCtxDestroy(ctx);
    }
    return cudaSuccess;
}

API cudaError_t cudaThreadExit(void)
{
    return cudaDeviceReset();
}

API cudaError_t cudaDriverGetVersion(int *v)
{
    return rt_set(rt_from(cuDriverGetVersion(v)));
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v)
        return rt_set(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

API cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

API cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

#define RT_NAMES(X) \
    X(cudaSuccess) X(cudaErrorInvalidValue) X(cudaErrorMemoryAllocation) \
    X(cudaErrorStreamCaptureUnmatched) X(cudaErrorStreamCaptureUnjoined) \
    X(cudaErrorStreamCaptureIsolation) X(cudaErrorGraphExecUpdateFailure) \
    X(cudaErrorPeerAccessAlreadyEnabled) X(cudaErrorPeerAccessNotEnabled) \
    X(cudaErrorPeerAccessUnsupported) X(cudaErrorHostMemoryAlreadyRegistered) \
    X(cudaErrorHostMemoryNotRegistered) X(cudaErrorUnsupportedLimit) \
    X(cudaErrorInvalidPitchValue) X(cudaErrorInvalidChannelDescriptor) \
    X(cudaErrorInitializationError) X(cudaErrorInvalidConfiguration) \
    X(cudaErrorInvalidSymbol) X(cudaErrorInvalidDeviceFunction) \
    X(cudaErrorMissingConfiguration) X(cudaErrorInvalidMemcpyDirection) \
    X(cudaErrorDevicesUnavailable) X(cudaErrorNoDevice) X(cudaErrorInvalidDevice) \
    X(cudaErrorInvalidKernelImage) X(cudaErrorDeviceUninitialized) \
    X(cudaErrorNoKernelImageForDevice) X(cudaErrorInvalidPtx) X(cudaErrorFileNotFound) \
    X(cudaErrorOperatingSystem) X(cudaErrorInvalidResourceHandle) \
    X(cudaErrorSymbolNotFound) X(cudaErrorNotReady) X(cudaErrorIllegalAddress) \
    X(cudaErrorLaunchOutOfResources) X(cudaErrorLaunchTimeout) \
    X(cudaErrorContextIsDestroyed) X(cudaErrorAssert) X(cudaErrorLaunchFailure) \
    X(cudaErrorCooperativeLaunchTooLarge) X(cudaErrorNotPermitted) \
    X(cudaErrorNotSupported) X(cudaErrorIllegalState) X(cudaErrorStreamCaptureUnsupported) \
    X(cudaErrorStreamCaptureInvalidated) X(cudaErrorStreamCaptureImplicit) X(cudaErrorUnknown)

API const char *cudaGetErrorName(cudaError_t e)
{
#define NAME(n) case n: return #n;
    switch (e) {
    RT_NAMES(NAME)
    default: return "cudaErrorUnknown";
    }
#undef NAME
}

API const char *cudaGetErrorString(cudaError_t e)
{
    const char *s = NULL;
    switch (e) {
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorMissingConfiguration: return "__global__ function call is not configured";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorDeviceUninitialized: return "invalid device context";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureUnmatched:
        return "capture was not ended in the same stream as it began";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream";
    case cudaErrorGraphExecUpdateFailure:
        return "the graph update was not performed because it included changes which "
               "violated constraints specific to instantiated graph update";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorPeerAccessUnsupported:
        return "peer access is not supported between these two devices";
    default: break;
    }
    if (cuGetErrorString((CUresult)e, &s) || !s)
        return "unrecognized error code";
    return s;
}
