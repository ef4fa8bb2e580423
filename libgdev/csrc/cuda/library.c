/* Context-independent loading (CUDA 12's cuLibrary*, cuKernel*).
 *
 * A library keeps its PTX (converted once from whatever image it was given) and the
 * daemon's function table for it, read when it is loaded: through the current context's
 * device, on a private Gdev handle opened for the load and closed at once, so a library can
 * be loaded with no context at all and its image is checked at load time as CUDA checks it.
 * In each context that uses it (cuKernelGetFunction, cuLibraryGetModule, cuLibraryGetGlobal,
 * or a launch of a CUkernel) the library is loaded as an ordinary module on first use and
 * remembered with the context's id; an entry of a destroyed context is stale and skipped (a
 * context's struct is never freed, and a primary context's is used again after a reset, with a
 * new id).  A CUkernel starts with KERNEL_MAGIC, a value no
 * CUfunction starts with (its first word is a module pointer), which is how the calls that
 * take a CUfunction accept a CUkernel, as CUDA allows (cu_function_of). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

#define KERNEL_MAGIC 0x4744657643556b6eull /* non-canonical as an address */

struct CUkern_st {
    uint64_t magic;
    struct CUlib_st *lib;
    uint32_t index; /* in the library's function table */
};

struct loaded {
    CUcontext ctx;
    unsigned long long id; /* the context's id when it loaded the module */
    CUmodule mod;
};

static int live(const struct loaded *e)
{
    return !e->ctx->destroyed && e->ctx->id == e->id;
}

struct CUlib_st {
    char *ptx;
    size_t len;
    struct gdev_module *table; /* names, parameters and attributes of the functions */
    struct CUkern_st *kernels;
    struct loaded *loaded;
    size_t nloaded, cap;
    pthread_mutex_t lock;
};

/* The daemon's table for the PTX, from a load on a private handle of device `dev`. */
static CUresult read_table(struct CUlib_st *l, CUdevice dev)
{
    Ghandle h = gopen(dev);
    if (!h)
        return cu_fail(CUDA_ERROR_INVALID_DEVICE, "cuLibraryLoad: %s", gdev_last_error());
    l->table = gmodule_load(h, l->ptx, l->len, "<library>");
    CUresult r = l->table ? CUDA_SUCCESS : cu_load_error(NULL);
    gclose(h); /* the daemon drops the module with the handle; the table is ours */
    return r;
}

static void free_library(struct CUlib_st *l)
{
    if (l->table)
        gdev_module_free(l->table);
    free(l->kernels);
    free(l->loaded);
    free(l->ptx);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static CUresult load_library(CUlibrary *out, const void *image)
{
    const char *ptx;
    char *owned = NULL;
    size_t len;
    CUcontext c = NULL;
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = cu_image_to_ptx(image, &ptx, &len, &owned);
    struct CUlib_st *l = r ? NULL : calloc(1, sizeof *l);
    if (!r && (!l || !(l->ptx = malloc(len + 1))))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        memcpy(l->ptx, ptx, len);
        l->ptx[len] = 0;
        l->len = len;
        pthread_mutex_init(&l->lock, NULL);
        r = read_table(l, cuCtxGetCurrent(&c) || !c || c->destroyed ? 0 : c->dev);
    }
    if (!r && !(l->kernels = calloc(l->table->n_functions + 1, sizeof *l->kernels)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    free(owned);
    if (r) {
        if (l && l->ptx)
            free_library(l);
        else
            free(l);
        return r;
    }
    for (uint32_t i = 0; i < l->table->n_functions; i++)
        l->kernels[i] = (struct CUkern_st){KERNEL_MAGIC, l, i};
    *out = l;
    return CUDA_SUCCESS;
}

/* Library options change nothing here: the image is copied at load either way. */
static CUresult check_options(unsigned n, CUlibraryOption *opts)
{
    for (unsigned i = 0; i < n; i++)
        if (opts[i] != CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE &&
            opts[i] != CU_LIBRARY_BINARY_IS_PRESERVED)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit,
                               void **jit_values, unsigned int njit, CUlibraryOption *opts,
                               void **opt_values, unsigned int nopts)
{
    struct timespec t0;
    (void)opt_values;
    if ((nopts && !opts) || (njit && (!jit || !jit_values)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_options(nopts, opts);
    if (r)
        return r;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = load_library(library, code);
    cu_jit_report(njit, jit, jit_values, cu_ms_since(&t0), "", r ? gdevCudaLastError() : "");
    return r;
}

API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *path, CUjit_option *jit,
                                   void **jit_values, unsigned int njit, CUlibraryOption *opts,
                                   void **opt_values, unsigned int nopts)
{
    char *buf;
    if (!path || !library)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cu_read_file("cuLibraryLoadFromFile", path, &buf);
    if (r)
        return r;
    r = cuLibraryLoadData(library, buf, jit, jit_values, njit, opts, opt_values, nopts);
    free(buf);
    return r;
}

/* Its modules leave every live context that loaded it; its kernels become invalid. */
API CUresult cuLibraryUnload(CUlibrary l)
{
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < l->nloaded; i++)
        if (live(&l->loaded[i]))
            cuModuleUnload(l->loaded[i].mod);
    free_library(l);
    return CUDA_SUCCESS;
}

/* The library's module in the current context, loaded on first use there. */
CUresult cu_library_module(CUlibrary l, CUmodule *mod)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    if (!l || !mod)
        return !l ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&l->lock);
    *mod = NULL;
    for (size_t i = 0; i < l->nloaded && !*mod; i++)
        *mod = l->loaded[i].ctx == c && live(&l->loaded[i]) ? l->loaded[i].mod : NULL;
    if (!*mod && l->nloaded == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        struct loaded *more = realloc(l->loaded, cap * sizeof *more);
        r = more ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        if (more)
            l->loaded = more, l->cap = cap;
    }
    if (!*mod && !r && !(r = cu_load_ptx(c, l->ptx, l->len, mod)))
        l->loaded[l->nloaded++] = (struct loaded){c, c->id, *mod};
    pthread_mutex_unlock(&l->lock);
    return r;
}

API CUresult cuLibraryGetModule(CUmodule *mod, CUlibrary l)
{
    return cu_library_module(l, mod);
}

API CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary l, const char *name)
{
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!kernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (uint32_t i = 0; i < l->table->n_functions; i++)
        if (!strcmp(l->table->functions[i].name, name)) {
            *kernel = &l->kernels[i];
            return CUDA_SUCCESS;
        }
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no kernel named %s in the library", name);
}

API CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary l)
{
    if (!l || !count)
        return !l ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *count = l->table->n_functions;
    return CUDA_SUCCESS;
}

API CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n, CUlibrary l)
{
    if (!l || !kernels)
        return !l ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n && i < l->table->n_functions; i++)
        kernels[i] = &l->kernels[i];
    return CUDA_SUCCESS;
}

/* A global of the library in the current context (each context has its own copy). */
API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l,
                                const char *name)
{
    CUmodule mod;
    CUresult r = cu_library_module(l, &mod);
    return r ? r : cuModuleGetGlobal(dptr, bytes, mod, name);
}

/* The library's module in the current context, or without one in device 0's primary
 * context (activated if it is not: NVIDIA's static runtime asks for managed variables when it
 * registers the program's code, before it makes that context current). */
static CUresult managed_module(CUlibrary l, CUmodule *mod)
{
    CUcontext c = NULL;
    if (!cuCtxGetCurrent(&c) && c)
        return cu_library_module(l, mod);
    CUresult r = cu_primary_handle(&c, 0);
    if (r || (r = cuCtxPushCurrent(c)))
        return r;
    r = cu_library_module(l, mod);
    cuCtxPopCurrent(&c);
    return r;
}

/* A __managed__ variable of the library: its global in that module, whose data segment
 * gdevd keeps in pinned memory that is mapped here at the same address (gmodule_data), so
 * the host and the kernels use one copy.  NVIDIA's static runtime sets the host's pointer of
 * each managed variable from this.  The variable is that context's: kernels of another
 * context (another device) see their own copy. */
API CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary l,
                                 const char *name)
{
    CUmodule mod;
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!dptr || !name)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = managed_module(l, &mod);
    if (r || (r = cuModuleGetGlobal(dptr, bytes, mod, name)))
        return r;
    if (gmodule_data(mod->ctx->h, mod->gm)) {
        if (!mod->data_mapped) /* its pointers say managed (cuPointerGetAttribute) */
            cu_track_alloc(mod->ctx, mod->gm->data_addr, mod->gm->data_size, 1);
        mod->data_mapped = 1;
        return CUDA_SUCCESS;
    }
    static int said;
    cu_notice(&said, "__managed__ variable %s: its module's data is not host memory (%s); "
              "the host cannot use it", name, gdev_last_error());
    return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuLibraryGetManaged: %s: %s", name,
                   gdev_last_error());
}

/* A unified function is host code compiled into a cubin library; a library of PTX has none. */
API CUresult cuLibraryGetUnifiedFunction(void **fptr, CUlibrary l, const char *symbol)
{
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fptr || !symbol)
        return CUDA_ERROR_INVALID_VALUE;
    *fptr = NULL;
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no unified function named %s in the library (a "
                   "library of PTX has none)", symbol);
}

/* ---- kernels -------------------------------------------------------------------------- */

int cu_is_kernel(const void *f)
{
    uint64_t first;
    if (!f)
        return 0;
    memcpy(&first, f, sizeof first);
    return first == KERNEL_MAGIC;
}

const struct gdev_function *cu_kernel_info(CUkernel k, CUlibrary *lib)
{
    if (!cu_is_kernel(k))
        return NULL;
    if (lib)
        *lib = k->lib;
    return &k->lib->table->functions[k->index];
}

API CUresult cuKernelGetFunction(CUfunction *fn, CUkernel k)
{
    CUmodule mod;
    if (!cu_is_kernel(k))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cu_library_module(k->lib, &mod);
    return r ? r : cuModuleGetFunction(fn, mod, k->lib->table->functions[k->index].name);
}

uint32_t cu_library_target(CUlibrary l)
{
    return l->table->target_sm;
}

CUresult cu_function_of(CUfunction *f)
{
    return cu_is_kernel(*f) ? cuKernelGetFunction(f, (CUkernel)(void *)*f) : CUDA_SUCCESS;
}
