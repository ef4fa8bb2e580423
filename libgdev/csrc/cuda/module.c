/* Modules: the daemon loads them (MODULE_LOAD: it parses, links, lays out and places the
 * data segment); the client keeps the function table it replies with.  No PTX is parsed
 * here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

static void unload(CUmodule m)
{
    CUcontext c = m->ctx;
    pthread_mutex_lock(&c->lock);
    for (CUmodule *link = &c->modules; *link; link = &(*link)->next)
        if (*link == m) {
            *link = m->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    if (m->data_mapped) /* its managed variables leave the context's allocations */
        cu_untrack_alloc(c, m->gm->data_addr);
    if (m->ctx->h)
        gmodule_unload(m->ctx->h, m->gm); /* frees the table too */
    else
        gdev_module_free(m->gm);
    free(m->funcs);
    free(m);
}

/* The daemon's loader refusing a module: ENOEXEC is not PTX text, EINVAL PTX it rejects
 * (its message names the line); anything else as everywhere (docs/cuda.md), a kernel fault
 * of context c (when not NULL) poisoning it. */
CUresult cu_load_error(CUcontext c)
{
    int err = gdev_last_errno();
    CUresult r = err == ENOEXEC ? CUDA_ERROR_INVALID_IMAGE
                 : err == EINVAL ? CUDA_ERROR_INVALID_PTX : cu_error(-err);
    r = cu_fail(r, "loading a module: %s", gdev_last_error());
    return c ? cu_poison(c, r) : r;
}

CUresult cu_load_ptx(CUcontext c, const char *text, size_t len, CUmodule *out)
{
    CUmodule m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = c;
    m->gm = gmodule_load(c->h, text, len, "<module>");
    if (!m->gm) {
        free(m);
        return cu_load_error(c);
    }
    m->funcs = calloc(m->gm->n_functions + 1, sizeof *m->funcs);
    if (!m->funcs) {
        gmodule_unload(c->h, m->gm);
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < m->gm->n_functions; i++)
        m->funcs[i] = (struct CUfunc_st){.mod = m, .index = i, .info = &m->gm->functions[i],
                                         .bx = 1, .by = 1, .bz = 1};
    pthread_mutex_lock(&c->lock);
    m->next = c->modules;
    c->modules = m;
    pthread_mutex_unlock(&c->lock);
    *out = m;
    return CUDA_SUCCESS;
}

void cu_unload_all(CUcontext c)
{
    while (c->modules)
        unload(c->modules);
}

static CUresult load_image(CUmodule *module, const void *image)
{
    const char *ptx;
    char *owned;
    size_t len;
    CUcontext c = NULL;
    CUresult r = cu_live(&c);

    if (r)
        return r;
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    r = cu_image_to_ptx(image, &ptx, &len, &owned);
    if (!r)
        r = cu_load_ptx(c, ptx, len, module);
    free(owned);
    return r;
}

API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return load_image(module, image);
}

API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                CUjit_option *options, void **values)
{
    /* JIT options tune a compiler the daemon does not have (it runs PTX); the output ones
     * (wall time, info and error logs) are written back, the error log with the reason */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CUresult r = load_image(module, image);
    cu_jit_report(n, options, values, cu_ms_since(&t0), "", r ? gdevCudaLastError() : "");
    return r;
}

API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fat)
{
    return load_image(module, fat);
}

CUresult cu_read_file(const char *who, const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return cu_fail(CUDA_ERROR_FILE_NOT_FOUND, "%s: %s: %s", who, path, strerror(errno));
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)
        || !(buf = calloc(1, (size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return cu_fail(CUDA_ERROR_FILE_NOT_FOUND, "%s: reading %s", who, path);
    }
    fclose(f);
    *out = buf;
    return CUDA_SUCCESS;
}

API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    char *buf;
    CUresult r;

    if (!fname || !module)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = cu_read_file("cuModuleLoad", fname, &buf)))
        return r;
    r = load_image(module, buf); /* PTX text whatever the file is called, or a fatbinary */
    free(buf);
    return r;
}

API CUresult cuModuleUnload(CUmodule m)
{
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    if (m->ctx->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    unload(m);
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule m, const char *name)
{
    if (!hfunc || !m || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < m->gm->n_functions; i++)
        if (!strcmp(m->gm->functions[i].name, name)) {
            *hfunc = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no kernel named %s in the module", name);
}

API CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name)
{
    if (!m || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < m->gm->n_globals; i++)
        if (!strcmp(m->gm->globals[i].name, name)) {
            if (dptr)
                *dptr = m->gm->globals[i].addr;
            if (bytes)
                *bytes = m->gm->globals[i].size;
            return CUDA_SUCCESS;
        }
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no global named %s in the module", name);
}
