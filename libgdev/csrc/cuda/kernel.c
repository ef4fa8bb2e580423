/* What a CUkernel of a library says of itself (cuKernelGet/SetAttribute, SetCacheConfig,
 * GetName, GetParamInfo, GetLibrary), from the library's function table, with no context
 * needed.  Settings are hints here, as cuFuncSetAttribute's are (launch.c): the emulated
 * device has one cache configuration and runs any dynamic shared size the table allows. */
#include "cuda_internal.h"

#define KERNEL(k, i, lib) CUlibrary lib; const struct gdev_function *i = cu_kernel_info(k, &lib); \
    do { if (!i) return CUDA_ERROR_INVALID_HANDLE; } while (0)

/* The kernel's function in the current context when that context is on device dev: where
 * the attributes set on a kernel are kept (launch.c), NULL otherwise. */
static CUfunction function_on(CUkernel k, CUdevice dev)
{
    CUcontext c = NULL;
    CUfunction f = NULL;
    if (cu_current(&c) || c->dev != dev || cuKernelGetFunction(&f, k))
        return NULL;
    return f;
}

API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel k,
                                  CUdevice dev)
{
    KERNEL(k, info, lib);
    CUresult r = cu_valid_device(dev);
    if (r || !pi)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    CUfunction f = function_on(k, dev);
    return f ? cuFuncGetAttribute(pi, attrib, f)
             : cu_func_attribute(info, cu_library_target(lib), dev, attrib, pi);
}

API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel k,
                                  CUdevice dev)
{
    KERNEL(k, info, lib);
    (void)lib;
    CUresult r = cu_valid_device(dev);
    if (r)
        return r;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
        (val < 0 || (unsigned)val > info->max_dynamic_shared))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: at most %u bytes of dynamic shared "
                       "memory", info->name, info->max_dynamic_shared);
    if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = function_on(k, dev); /* kept there, said back by both Get calls */
    return f ? cuFuncSetAttribute(f, attrib, val) : CUDA_SUCCESS;
}

API CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache config, CUdevice dev)
{
    KERNEL(k, info, lib);
    (void)info, (void)lib;
    CUresult r = cu_valid_device(dev);
    return r ? r : config > CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_ERROR_INVALID_VALUE
                                                       : CUDA_SUCCESS;
}

API CUresult cuKernelGetName(const char **name, CUkernel k)
{
    KERNEL(k, info, lib);
    (void)lib;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = info->name;
    return CUDA_SUCCESS;
}

API CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t *offset, size_t *size)
{
    KERNEL(k, info, lib);
    (void)lib;
    if (!offset || !size || index >= info->n_params)
        return CUDA_ERROR_INVALID_VALUE;
    *offset = info->params[index].offset;
    *size = info->params[index].size;
    return CUDA_SUCCESS;
}

API CUresult cuKernelGetLibrary(CUlibrary *out, CUkernel k)
{
    KERNEL(k, info, lib);
    (void)info;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = lib;
    return CUDA_SUCCESS;
}
