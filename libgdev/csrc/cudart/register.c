/* What nvcc's host code calls: registration of fatbinaries, kernels and variables at
 * start-up, the <<<...>>> call configuration, and kernel launches by host stub address. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_func **funcs;
static size_t nfuncs;
static struct rt_var **vars;
static size_t nvars;

API void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct rt_fatbin *fb = calloc(1, sizeof *fb);
    if (fb)
        fb->wrapper = fatCubin;
    return (void **)fb;
}

API void __cudaRegisterFatBinaryEnd(void **handle)
{
    (void)handle; /* modules load lazily, on a kernel's or variable's first use */
}

API void __cudaUnregisterFatBinary(void **handle)
{
    (void)handle; /* at exit: the daemon frees the contexts' memory with the session */
}

static void *grow(void *array, size_t n)
{
    return (n & (n - 1)) == 0 ? realloc(array, (n ? 2 * n : 1) * sizeof(void *)) : array;
}

API void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                const char *deviceName, int thread_limit, uint3 *tid,
                                uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    struct rt_func *f = calloc(1, sizeof *f);
    (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim;
    (void)wSize;
    if (!f)
        return;
    f->host_fun = hostFun;
    f->name = strdup(deviceName);
    f->fatbin = (struct rt_fatbin *)handle;
    pthread_mutex_lock(&lock);
    struct rt_func **g = grow(funcs, nfuncs);
    if (g) {
        funcs = g;
        funcs[nfuncs++] = f;
    }
    pthread_mutex_unlock(&lock);
}

API void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress,
                           const char *deviceName, int ext, size_t size, int constant,
                           int global)
{
    struct rt_var *v = calloc(1, sizeof *v);
    (void)deviceAddress, (void)ext, (void)constant, (void)global;
    if (!v)
        return;
    v->host_var = hostVar;
    v->name = strdup(deviceName);
    v->size = size;
    v->fatbin = (struct rt_fatbin *)handle;
    pthread_mutex_lock(&lock);
    struct rt_var **g = grow(vars, nvars);
    if (g) {
        vars = g;
        vars[nvars++] = v;
    }
    pthread_mutex_unlock(&lock);
}

/* The fatbinary's module in the current device's context, loaded on first use. */
cudaError_t rt_module(struct rt_fatbin *fb, CUmodule *mod)
{
    CUcontext ctx;
    unsigned long long id = 0;
    cudaError_t e = rt_ctx(&ctx);
    int dev = rt_device();
    if (e || (e = rt_from(cuCtxGetId(ctx, &id))))
        return e;
    pthread_mutex_lock(&lock);
    if (!fb->mod[dev] || fb->modctx[dev] != id) {
        /* a device-linked (-rdc) wrapper too: libcuda links its units (cu_prelinked_image) */
        e = rt_from(cuModuleLoadFatBinary(&fb->mod[dev], fb->wrapper));
        if (e) {
            fb->mod[dev] = NULL;
            pthread_mutex_unlock(&lock);
            return e;
        }
        fb->modctx[dev] = id;
    }
    *mod = fb->mod[dev];
    pthread_mutex_unlock(&lock);
    return cudaSuccess;
}

void rt_forget_device(int dev)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nfuncs; i++) {
        funcs[i]->fn[dev] = NULL;
        funcs[i]->fatbin->mod[dev] = NULL;
    }
    for (size_t i = 0; i < nvars; i++)
        vars[i]->fatbin->mod[dev] = NULL;
    pthread_mutex_unlock(&lock);
}

static struct rt_func *find_func(const void *host_fun)
{
    struct rt_func *f = NULL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nfuncs && !f; i++)
        if (funcs[i]->host_fun == host_fun || funcs[i] == host_fun)
            f = funcs[i];
    pthread_mutex_unlock(&lock);
    return f;
}

cudaError_t rt_function(const void *host_fun, CUfunction *fn)
{
    struct rt_func *f = find_func(host_fun);
    CUmodule mod;
    CUcontext ctx;
    cudaError_t e;
    if (!f && host_fun && !(e = rt_ctx(&ctx))) /* a library's kernel (cudaLibraryGetKernel) */
        return cuKernelGetFunction(fn, (CUkernel)(uintptr_t)host_fun) ? cudaErrorInvalidDeviceFunction
                                                                      : cudaSuccess;
    if (!f)
        return cudaErrorInvalidDeviceFunction;
    if ((e = rt_module(f->fatbin, &mod)))
        return e;
    int dev = rt_device();
    if (!f->fn[dev] || f->fnmod[dev] != mod) {
        CUresult r = cuModuleGetFunction(&f->fn[dev], mod, f->name);
        if (r)
            return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction : rt_from(r);
        f->fnmod[dev] = mod;
    }
    *fn = f->fn[dev];
    return cudaSuccess;
}

const void *rt_host_stub(const void *func)
{
    struct rt_func *f = find_func(func);
    return f ? f->host_fun : func;
}

cudaError_t rt_symbol(const void *symbol, CUdeviceptr *addr, size_t *size)
{
    struct rt_var *v = NULL;
    CUmodule mod;
    cudaError_t e;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars && !v; i++)
        if (vars[i]->host_var == symbol)
            v = vars[i];
    pthread_mutex_unlock(&lock);
    if (!v)
        return cudaErrorInvalidSymbol;
    if ((e = rt_module(v->fatbin, &mod)))
        return e;
    return cuModuleGetGlobal(addr, size, mod, v->name) ? cudaErrorInvalidSymbol : cudaSuccess;
}

/* ---- <<<grid, block, shared, stream>>> ------------------------------------------------ */

struct config {
    dim3 grid, block;
    size_t shared;
    void *stream;
};
static _Thread_local struct config configs[16];
static _Thread_local int nconfigs;

API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                         struct CUstream_st *stream)
{
    if (nconfigs == 16)
        return 1;
    configs[nconfigs++] = (struct config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                           void *stream)
{
    if (!nconfigs)
        return cudaErrorMissingConfiguration;
    struct config c = configs[--nconfigs];
    *gridDim = c.grid;
    *blockDim = c.block;
    *sharedMem = c.shared;
    *(void **)stream = c.stream;
    return cudaSuccess;
}

/* What every launch checks first: the function of `func`, and a configuration CUDA takes. */
static cudaError_t launch_function(const void *func, dim3 grid, dim3 block, CUfunction *fn)
{
    cudaError_t e = rt_function(func, fn);
    if (e)
        return e;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z
        || (uint64_t)block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

API cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                                 size_t sharedMem, cudaStream_t stream)
{
    CUfunction fn;
    cudaError_t e = launch_function(func, grid, block, &fn);
    if (e)
        return rt_set(e);
    if (rt_capturing(stream))
        return rt_set(rt_capture_kernel(stream, func, grid, block, args, sharedMem));
    if ((e = rt_managed_push()))
        return rt_set(e);
    return rt_set(rt_from(cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                         (unsigned)sharedMem, stream, args, NULL)));
}

/* Every block resident at once, for this_grid().sync() (libcuda's cuLaunchCooperativeKernel:
 * a grid larger than the occupancy x the multiprocessors is
 * cudaErrorCooperativeLaunchTooLarge).  Not captured into graphs. */
API cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block,
                                            void **args, size_t sharedMem, cudaStream_t stream)
{
    CUfunction fn;
    cudaError_t e = launch_function(func, grid, block, &fn);
    if (e)
        return rt_set(e);
    if (rt_capturing(stream))
        return rt_set(cudaErrorStreamCaptureUnsupported);
    if ((e = rt_managed_push()))
        return rt_set(e);
    return rt_set(rt_from(cuLaunchCooperativeKernel(fn, grid.x, grid.y, grid.z, block.x,
                                                    block.y, block.z, (unsigned)sharedMem,
                                                    stream, args)));
}

/* cudaLaunchKernelEx: the attributes that are hints (access policy, synchronization policy,
 * priority, programmatic serialization, memory sync domains) change nothing here; the
 * cooperative one launches as cudaLaunchCooperativeKernel; clusters of more than one block
 * are not supported and say so. */
API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                    void **args)
{
    int cooperative = 0;
    if (!config || (config->numAttrs && !config->attrs))
        return rt_set(cudaErrorInvalidValue);
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const cudaLaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case cudaLaunchAttributeCooperative:
            cooperative = a->val.cooperative != 0;
            break;
        case cudaLaunchAttributeClusterDimension:
            if (a->val.clusterDim.x * a->val.clusterDim.y * a->val.clusterDim.z > 1)
                return rt_set(cudaErrorNotSupported);
            break;
        case cudaLaunchAttributeIgnore:
        case cudaLaunchAttributeAccessPolicyWindow:
        case cudaLaunchAttributeSynchronizationPolicy:
        case cudaLaunchAttributeProgrammaticStreamSerialization:
        case cudaLaunchAttributeProgrammaticEvent:
        case cudaLaunchAttributePriority:
        case cudaLaunchAttributeMemSyncDomainMap:
        case cudaLaunchAttributeMemSyncDomain:
            break;
        default:
            return rt_set(cudaErrorInvalidValue);
        }
    }
    if (cooperative)
        return cudaLaunchCooperativeKernel(func, config->gridDim, config->blockDim, args,
                                           config->dynamicSmemBytes, config->stream);
    return cudaLaunchKernel(func, config->gridDim, config->blockDim, args,
                            config->dynamicSmemBytes, config->stream);
}

API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    struct rt_func *f = find_func(func);
    if (!f)
        return rt_set(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)f;
    return cudaSuccess;
}

API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                   size_t sharedMem, cudaStream_t stream)
{
    return cudaLaunchKernel(kernel, grid, block, args, sharedMem, stream);
}

API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
    return cudaLaunchKernel(kernel, grid, block, args, sharedMem, stream);
}

/* The names nvcc --default-stream per-thread binds these by (cudart_internal.h). */
RT_PTSZ(cudaLaunchCooperativeKernel) RT_PTSZ(cudaLaunchKernelExC) RT_PTSZ(cudaLaunchKernel)
