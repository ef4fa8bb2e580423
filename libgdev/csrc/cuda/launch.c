/* Launches: cuLaunchKernel packs kernelParams by the parameter layout of the daemon's
 * function table (or takes CU_LAUNCH_PARAM_BUFFER_POINTER as is) and names the function by
 * its index (MODULE_LAUNCH); cuLaunchCooperativeKernel and cuLaunchKernelEx's cooperative
 * attribute set its LAUNCH_COOPERATIVE flag; the legacy path (cuParamSet*, cuFuncSetBlockShape,
 * cuLaunchGrid) fills the same buffer by offsets. */
#include <errno.h>
#include <string.h>

#include "cuda_internal.h"

int cu_stream_is_legacy(CUstream s)
{
    return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult cu_stream_owner(CUstream s, CUcontext *ctx)
{
    if (cu_stream_is_legacy(s))
        return cu_current(ctx);
    *ctx = s->ctx; /* contexts are never freed: a destroyed one says so */
    return s->ctx->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_SUCCESS;
}

uint32_t *cu_stream_fence(CUcontext c, CUstream s)
{
    return cu_stream_is_legacy(s) ? &c->last_fence : &s->last_fence;
}

uint32_t cu_stream_id(CUstream s)
{
    return cu_stream_is_legacy(s) ? 0 : s->sid;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, CUstream s,
                       const void *params, uint32_t psize, uint32_t flags)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    uint32_t id;

    if (r || (r = cu_function_of(&f)))
        return r;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (f->mod->ctx != c)
        return cu_fail(CUDA_ERROR_INVALID_HANDLE, "%s belongs to another context",
                       f->info->name);
    /* CUDA: a kernel goes to a stream of its own device */
    if (!cu_stream_is_legacy(s) && s->ctx != c)
        return cu_fail(CUDA_ERROR_INVALID_HANDLE, "launching %s into a stream of another "
                       "context (make the stream's context current first)", f->info->name);
    if (c->sticky)
        return c->sticky;
    if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: grid %ux%ux%u block %ux%ux%u",
                       f->info->name, gx, gy, gz, bx, by, bz);
    struct gdev_kernel k = {
        .param_buf = params, .param_size = psize, .smem_size = shared,
        .grid_x = gx, .grid_y = gy, .grid_z = gz, .block_x = bx, .block_y = by, .block_z = bz};
    int err = gstream_module_launch_flags(c->h, cu_stream_id(s), f->mod->gm, f->index, &k,
                                          flags, &id);
    if (err)
        return cu_fail(err == -EINVAL ? CUDA_ERROR_INVALID_VALUE : cu_error(err),
                       "launching %s: %s", f->info->name, gdev_last_error());
    *cu_stream_fence(c, s) = id;
    if (f->info->prints)
        __atomic_store_n(&c->printf_pending, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

/* cuLaunchKernel with GDEV_ABI_LAUNCH_* flags: kernelParams packed by the function table,
 * or extra's buffer as is */
static CUresult launch_args(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, CUstream s,
                            void **kernelParams, void **extra, uint32_t flags)
{
    static _Thread_local uint8_t buf[GDEV_PARAM_MAX];
    CUresult r = cu_function_of(&f); /* a CUkernel: its function in the current context */

    if (r)
        return r;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (extra) {
        const void *p = NULL;
        size_t size = 0;
        for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                p = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                size = *(size_t *)extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (!p || size < f->info->param_size)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: parameter buffer of %zu bytes, "
                           "want %u", f->info->name, size, f->info->param_size);
        return launch(f, gx, gy, gz, bx, by, bz, shared, s, p, f->info->param_size, flags);
    }
    if (f->info->n_params && !kernelParams)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s takes %u parameters", f->info->name,
                       f->info->n_params);
    if (f->info->param_size > sizeof buf)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: parameters of %u bytes", f->info->name,
                       f->info->param_size);
    memset(buf, 0, f->info->param_size);
    for (unsigned i = 0; i < f->info->n_params; i++)
        memcpy(buf + f->info->params[i].offset, kernelParams[i], f->info->params[i].size);
    return launch(f, gx, gy, gz, bx, by, bz, shared, s, buf, f->info->param_size, flags);
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, CUstream s,
                            void **kernelParams, void **extra)
{
    return launch_args(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, extra, 0);
}

/* Every block resident at once, with a grid workspace for this_grid().sync(); a grid larger
 * than cuOccupancyMaxActiveBlocksPerMultiprocessor x the multiprocessors is refused by the
 * daemon (EOVERFLOW: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). */
API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                       CUstream s, void **kernelParams)
{
    return launch_args(f, gx, gy, gz, bx, by, bz, shared, s, kernelParams, NULL,
                       GDEV_ABI_LAUNCH_COOPERATIVE);
}

/* cuLaunchKernelEx: the cooperative attribute launches cooperatively; the hints (access
 * policy, synchronization policy, priority, programmatic serialization, memory sync
 * domains) change nothing here; clusters of more than one block are not supported. */
API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                              void **extra)
{
    uint32_t flags = 0;
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            flags = a->value.cooperative ? GDEV_ABI_LAUNCH_COOPERATIVE : 0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if ((uint64_t)a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
                return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "clusters of more than one block");
            break;
        case CU_LAUNCH_ATTRIBUTE_IGNORE: case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
            break;
        default:
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "launch attribute %d", (int)a->id);
        }
    }
    return launch_args(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                       config->blockDimX, config->blockDimY, config->blockDimZ,
                       config->sharedMemBytes, config->hStream, kernelParams, extra, flags);
}

/* Blocks of `block` threads one multiprocessor holds at once: the daemon's limit on a
 * cooperative grid per multiprocessor (libgdev/kernel.py coresident_blocks_per_mp: 1024
 * threads in whole warps, 64 KiB of shared memory, 16 blocks); the flags (caching) change
 * nothing here. */
API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f,
                                                                 int block, size_t dynamic,
                                                                 unsigned int flags)
{
    (void)flags;
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!n || !f || block <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((uint32_t)block > f->info->max_threads) {
        *n = 0;
        return CUDA_SUCCESS;
    }
    size_t shared = (size_t)f->info->static_shared + dynamic;
    int by_threads = 1024 / ((block + 31) / 32 * 32);
    int by_shared = shared ? (int)((64u << 10) / shared) : 16;
    *n = by_threads < by_shared ? by_threads : by_shared;
    if (*n > 16)
        *n = 16;
    return CUDA_SUCCESS;
}

API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block,
                                                         size_t dynamic)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, block, dynamic, 0);
}

/* Where parameter `index` of f lies in its parameter buffer (the daemon's function table). */
API CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!f || !offset || !size || index >= f->info->n_params)
        return CUDA_ERROR_INVALID_VALUE;
    *offset = f->info->params[index].offset;
    *size = f->info->params[index].size;
    return CUDA_SUCCESS;
}

/* An attribute of function i of a module for sm_`target` on device dev. */
CUresult cu_func_attribute(const struct gdev_function *i, uint32_t target, CUdevice dev,
                           CUfunction_attribute attrib, int *pi)
{
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)i->max_threads; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)i->static_shared; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = (int)i->const_size; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = (int)i->local_size; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = (int)i->num_regs; break;
    /* PTX_VERSION is the virtual architecture (75 for compute_75 code: CUB picks its tuning
     * policy by it), BINARY_VERSION the device's, which the PTX is compiled for at load */
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = (int)target; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: {
        int major = 0, minor = 0;
        CUresult r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                          dev);
        if (!r)
            r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        if (r)
            return r;
        *pi = 10 * major + minor;
        break;
    }
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = (int)i->max_dynamic_shared;
        break;
    default: *pi = 0;
    }
    return CUDA_SUCCESS;
}

API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f)
{
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!pi || !f)
        return CUDA_ERROR_INVALID_VALUE;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && f->has_dyn_max)
        return *pi = f->dyn_max, CUDA_SUCCESS;
    if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
        return *pi = f->has_carveout ? f->carveout : -1, CUDA_SUCCESS;
    return cu_func_attribute(f->info, f->mod->gm->target_sm, f->mod->ctx->dev, attrib, pi);
}

API CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config)
{
    (void)config;
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The settable attributes: the dynamic shared memory bound (up to what the daemon allows the
 * function: 64 KiB less its static shared memory) and the carveout (-1..100) are kept and
 * said back; the cluster hints are accepted (no clusters on compute capability 7.5); the
 * rest are read-only, INVALID_VALUE as in CUDA. */
API CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value)
{
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || (unsigned)value > f->info->max_dynamic_shared)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: at most %u bytes of dynamic shared "
                           "memory", f->info->name, f->info->max_dynamic_shared);
        f->dyn_max = value;
        f->has_dyn_max = 1;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return cu_fail(CUDA_ERROR_INVALID_VALUE, "carveout %d: -1 or a percentage", value);
        f->carveout = value;
        f->has_carveout = 1;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return CUDA_SUCCESS;
    default:
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "function attribute %d is read-only", attrib);
    }
}

/* ---- the legacy launch API: functions of modules only (a CUkernel keeps no launch state) */

API CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z)
{
    if (!f || cu_is_kernel(f) || x <= 0 || y <= 0 || z <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    f->bx = x;
    f->by = y;
    f->bz = z;
    return CUDA_SUCCESS;
}

API CUresult cuFuncSetSharedSize(CUfunction f, unsigned int bytes)
{
    if (!f || cu_is_kernel(f))
        return CUDA_ERROR_INVALID_VALUE;
    f->shared = bytes;
    return CUDA_SUCCESS;
}

API CUresult cuParamSetSize(CUfunction f, unsigned int numbytes)
{
    if (!f || cu_is_kernel(f) || numbytes > sizeof f->legacy_params)
        return CUDA_ERROR_INVALID_VALUE;
    f->legacy_size = numbytes;
    return CUDA_SUCCESS;
}

API CUresult cuParamSetv(CUfunction f, int offset, void *ptr, unsigned int numbytes)
{
    if (!f || cu_is_kernel(f) || offset < 0 ||
        (size_t)offset + numbytes > sizeof f->legacy_params || !ptr)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(f->legacy_params + offset, ptr, numbytes);
    return CUDA_SUCCESS;
}

API CUresult cuParamSeti(CUfunction f, int offset, unsigned int value)
{
    return cuParamSetv(f, offset, &value, sizeof value);
}

API CUresult cuParamSetf(CUfunction f, int offset, float value)
{
    return cuParamSetv(f, offset, &value, sizeof value);
}

API CUresult cuLaunchGridAsync(CUfunction f, int gx, int gy, CUstream s)
{
    if (!f || cu_is_kernel(f) || gx <= 0 || gy <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, (unsigned)gx, (unsigned)gy, 1, (unsigned)f->bx, (unsigned)f->by,
                  (unsigned)f->bz, f->shared, s, f->legacy_params, f->legacy_size, 0);
}

API CUresult cuLaunchGrid(CUfunction f, int gx, int gy)
{
    CUresult r = cuLaunchGridAsync(f, gx, gy, NULL);
    return r ? r : cuCtxSynchronize();
}

API CUresult cuLaunch(CUfunction f)
{
    return cuLaunchGrid(f, 1, 1);
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuLaunchKernel) PTSZ(cuLaunchKernelEx) PTSZ(cuLaunchCooperativeKernel)
