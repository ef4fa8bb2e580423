/* Modules: the PTX text goes into the context's device memory (the engine fetches and
 * decodes it from there, cached by content) with the module's data segment beside it; the
 * function table and parameter layouts come from the client-side scan (ptx.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (m->ctx->h) {
        if (m->code_addr)
            gfree(m->ctx->h, m->code_addr);
        if (m->data_addr)
            gfree(m->ctx->h, m->data_addr);
    }
    free(m->funcs);
    free(m->globals);
    free(m);
}

CUresult cu_load_ptx(CUcontext c, const char *text, size_t len, CUmodule *out)
{
    struct ptx_info info;
    CUresult r = ptx_scan(text, len, &info);
    CUmodule m;

    if (r)
        return r;
    m = calloc(1, sizeof *m);
    if (!m) {
        ptx_info_free(&info);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = c;
    m->funcs = info.funcs;
    m->nfuncs = info.nfuncs;
    m->globals = info.globals;
    m->nglobals = info.nglobals;
    for (unsigned i = 0; i < m->nfuncs; i++)
        m->funcs[i].mod = m;
    m->code_size = len;
    m->code_addr = gmalloc(c->h, len);
    r = m->code_addr ? cu_error(gmemcpy_to_device(c->h, m->code_addr, text, len))
                     : CUDA_ERROR_OUT_OF_MEMORY;
    if (!r && info.image_size) {
        m->data_size = info.image_size;
        m->data_addr = gmalloc(c->h, info.image_size);
        r = m->data_addr ? cu_error(gmemcpy_to_device(c->h, m->data_addr, info.image,
                                                      info.image_size))
                         : CUDA_ERROR_OUT_OF_MEMORY;
    }
    free(info.image);
    if (r) {
        unload(m);
        return cu_fail(r, "loading a module: %s", gdev_last_error());
    }
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
    CUresult r = cu_current(&c);

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
    (void)n; /* JIT options: there is no JIT to tune (PTX is interpreted) */
    (void)options;
    (void)values;
    return load_image(module, image);
}

API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fat)
{
    return load_image(module, fat);
}

API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FILE *f;
    char *buf;
    long n;
    CUresult r;

    if (!fname || !module)
        return CUDA_ERROR_INVALID_VALUE;
    f = fopen(fname, "rb");
    if (!f)
        return cu_fail(CUDA_ERROR_FILE_NOT_FOUND, "cuModuleLoad: %s: %s", fname,
                       strerror(errno));
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)
        || !(buf = calloc(1, (size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return cu_fail(CUDA_ERROR_FILE_NOT_FOUND, "cuModuleLoad: reading %s", fname);
    }
    fclose(f);
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
    for (unsigned i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i].name, name)) {
            *hfunc = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no kernel named %s in the module", name);
}

API CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name)
{
    if (!m || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < m->nglobals; i++)
        if (!strcmp(m->globals[i].name, name)) {
            if (dptr)
                *dptr = m->data_addr + m->globals[i].offset;
            if (bytes)
                *bytes = m->globals[i].size;
            return CUDA_SUCCESS;
        }
    return cu_fail(CUDA_ERROR_NOT_FOUND, "no global named %s in the module", name);
}
