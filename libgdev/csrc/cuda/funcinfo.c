/* Functions and modules described: which module a function is of, the module's functions,
 * the loading mode (eager: the daemon loads a whole module at cuModuleLoad, so every
 * function is loaded), and the occupancy calculator over launch.c's per-multiprocessor
 * limit (1024 threads in whole warps, 64 KiB of shared memory, 16 blocks). */
#include "cuda_internal.h"

#define MP_SHARED (64u << 10)

API CUresult cuFuncGetModule(CUmodule *mod, CUfunction f)
{
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!mod || !f)
        return !f ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *mod = f->mod;
    return CUDA_SUCCESS;
}

API CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction f)
{
    if (!state || !f)
        return !f ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

API CUresult cuFuncLoad(CUfunction f)
{
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; /* loaded with its module */
}

API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!cu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule m)
{
    if (!count || !m)
        return !m ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *count = m->gm->n_functions;
    return CUDA_SUCCESS;
}

/* The module's functions in the order of its table, at most n of them. */
API CUresult cuModuleEnumerateFunctions(CUfunction *fns, unsigned int n, CUmodule m)
{
    if (!fns || !m)
        return !m ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n && i < m->gm->n_functions; i++)
        fns[i] = &m->funcs[i];
    return CUDA_SUCCESS;
}

/* The block size with the most threads resident per multiprocessor (the largest such size
 * on a tie), and the grid that fills every multiprocessor with it. */
API CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *min_grid, int *block, CUfunction f,
                                                       CUoccupancyB2DSize dyn_of_block,
                                                       size_t dyn, int limit,
                                                       unsigned int flags)
{
    int mps = 0, best = 0, best_blocks = 0, best_threads = -1;
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!min_grid || !block || !f || limit < 0)
        return !f ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    r = cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, f->mod->ctx->dev);
    if (r)
        return r;
    int top = (int)f->info->max_threads;
    top = limit && limit < top ? limit : top;
    for (int b = top; b > 0; b = (b - 1) / 32 * 32) {
        int n = 0;
        size_t shared = dyn_of_block ? dyn_of_block(b) : dyn;
        if ((r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f, b, shared, flags)))
            return r;
        if (n * b > best_threads) {
            best = b;
            best_blocks = n;
            best_threads = n * b;
        }
    }
    *block = best;
    *min_grid = best_blocks * mps;
    return CUDA_SUCCESS;
}

API CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f,
                                              CUoccupancyB2DSize dyn_of_block, size_t dyn,
                                              int limit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block, f, dyn_of_block, dyn,
                                                     limit, 0);
}

/* Dynamic shared memory each of `blocks` blocks of `block` threads can have while all of them
 * are resident on one multiprocessor (0 when they cannot be, for their threads). */
API CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *size, CUfunction f, int blocks,
                                                     int block)
{
    CUresult r = cu_function_of(&f);
    if (r)
        return r;
    if (!size || !f || blocks <= 0 || block <= 0)
        return !f ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    size_t per = MP_SHARED / (unsigned)blocks, fixed = f->info->static_shared;
    int fits = (block + 31) / 32 * 32 * blocks <= 1024 && blocks <= 16 &&
               (unsigned)block <= f->info->max_threads;
    *size = !fits || per <= fixed ? 0 : per - fixed;
    if (*size > f->info->max_dynamic_shared)
        *size = f->info->max_dynamic_shared;
    return CUDA_SUCCESS;
}
