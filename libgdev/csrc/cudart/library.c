/* The runtime's context-independent loading: cudaLibrary* and cudaKernelSetAttributeForDevice
 * are libcuda's cuLibrary and cuKernel calls (library.c, kernel.c), as NVIDIA's runtime calls its
 * driver; cudaLibrary_t and cudaKernel_t are the driver's handles.  A library kernel is
 * launched and described through the calls that take a kernel (cudaLaunchKernel,
 * cudaFuncGetAttributes ...): rt_function resolves it in the current device's context. */
#include <stdint.h>

#include "cudart_internal.h"


API cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                    enum cudaJitOption *jit, void **jit_values, unsigned int njit,
                                    enum cudaLibraryOption *opts, void **opt_values,
                                    unsigned int nopts)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n); /* the driver initialized */
    if (e)
        return e;
    CALL(cuLibraryLoadData(lib, code, (CUjit_option *)jit, jit_values, njit,
                           (CUlibraryOption *)opts, opt_values, nopts));
}

API cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *lib, const char *path,
                                        enum cudaJitOption *jit, void **jit_values,
                                        unsigned int njit, enum cudaLibraryOption *opts,
                                        void **opt_values, unsigned int nopts)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    CALL(cuLibraryLoadFromFile(lib, path, (CUjit_option *)jit, jit_values, njit,
                               (CUlibraryOption *)opts, opt_values, nopts));
}

API cudaError_t cudaLibraryUnload(cudaLibrary_t lib)
{
    CALL(cuLibraryUnload(lib));
}

API cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t lib, const char *name)
{
    CALL(cuLibraryGetKernel(kernel, lib, name));
}

API cudaError_t cudaLibraryGetKernelCount(unsigned int *count, cudaLibrary_t lib)
{
    CALL(cuLibraryGetKernelCount(count, lib));
}

API cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t *kernels, unsigned int n,
                                            cudaLibrary_t lib)
{
    CALL(cuLibraryEnumerateKernels(kernels, n, lib));
}

/* The global in the current device's context (each context has its own copy). */
API cudaError_t cudaLibraryGetGlobal(void **dptr, size_t *bytes, cudaLibrary_t lib,
                                     const char *name)
{
    CUdeviceptr d = 0;
    IN_CTX();
    if (!dptr)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_from(cuLibraryGetGlobal(&d, bytes, lib, name));
    *dptr = (void *)(uintptr_t)d;
    return rt_set(e);
}

API cudaError_t cudaLibraryGetManaged(void **dptr, size_t *bytes, cudaLibrary_t lib,
                                      const char *name)
{
    CUdeviceptr d = 0;
    IN_CTX();
    if (!dptr)
        return rt_set(cudaErrorInvalidValue);
    cudaError_t e = rt_from(cuLibraryGetManaged(&d, bytes, lib, name));
    *dptr = (void *)(uintptr_t)d;
    return rt_set(e);
}

API cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                                int value, int device)
{
    cudaError_t e = rt_valid_device(device);
    if (e)
        return rt_set(e);
    CALL(cuKernelSetAttribute((CUfunction_attribute)attr, value, kernel, device));
}

API cudaError_t cudaLibraryGetUnifiedFunction(void **fptr, cudaLibrary_t lib, const char *symbol)
{
    CALL(cuLibraryGetUnifiedFunction(fptr, lib, symbol));
}
