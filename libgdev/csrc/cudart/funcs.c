/* Kernels by their host stubs (names, driver handles, parameter layout), shared-memory bank
 * configuration, and driver entry points through libcuda's cuGetProcAddress. */
#include <string.h>

#include "cudart_internal.h"

API cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    CUfunction fn;
    if (!name)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_function(func, &fn);
    return rt_set(e ? e : rt_from(cuFuncGetName(name, fn)));
}

API cudaError_t cudaGetFuncBySymbol(cudaFunction_t *fn, const void *symbol)
{
    if (!fn)
        return rt_set(cudaErrorInvalidValue);
    return rt_set(rt_function(symbol, fn));
}

/* nvcc's own entry (register.c): the kernel handle cudaLaunchKernel also takes. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);

API cudaError_t cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    if (!kernel)
        return rt_set(cudaErrorInvalidValue);
    return __cudaGetKernel(kernel, func);
}

API cudaError_t cudaFuncGetParamInfo(const void *func, size_t index, size_t *offset,
                                     size_t *size)
{
    CUfunction fn;
    if (!offset || !size)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_function(func, &fn);
    return rt_set(e ? e : rt_from(cuFuncGetParamInfo(fn, index, offset, size)));
}

/* Bank size: accepted and reported as four bytes, the only width the emulated shared memory
 * has (as on devices since Volta, where CUDA also ignores the setting). */
static int valid_bank(enum cudaSharedMemConfig c)
{
    return c == cudaSharedMemBankSizeDefault || c == cudaSharedMemBankSizeFourByte
           || c == cudaSharedMemBankSizeEightByte;
}

API cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config)
{
    return valid_bank(config) ? cudaSuccess : rt_set(cudaErrorInvalidValue);
}

API cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig *config)
{
    if (!config)
        return rt_set(cudaErrorInvalidValue);
    *config = cudaSharedMemBankSizeFourByte;
    return cudaSuccess;
}

API cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config)
{
    CUfunction fn;
    cudaError_t e = rt_function(func, &fn);
    if (!e && !valid_bank(config))
        e = cudaErrorInvalidValue;
    return rt_set(e);
}

static cudaError_t entry_point(const char *symbol, void **fn, int version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !fn || flags > (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream))
        return rt_set(cudaErrorInvalidValue);
    CUresult r = cuGetProcAddress(symbol, fn, version, flags, &st);
    if (status) /* the two enumerations have the same values */
        *status = (enum cudaDriverEntryPointQueryResult)st;
    return rt_set(rt_from(r));
}

API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                        enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, fn, CUDART_VERSION, flags, status);
}

API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                                 unsigned int version,
                                                 unsigned long long flags,
                                                 enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, fn, (int)version, flags, status);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaGetDriverEntryPointByVersion) RT_PTSZ(cudaGetDriverEntryPoint)
