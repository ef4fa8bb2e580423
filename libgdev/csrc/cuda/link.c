/* The JIT linker (cuLinkCreate .. cuLinkComplete) and the JIT options' logs.
 *
 * gdevd runs PTX, so "linking" keeps the PTX: cuLinkComplete hands back the one PTX input
 * (from PTX text, a file or a fatbinary's PTX entry) as the image cuModuleLoadData takes, as
 * CUDA's samples (ptxjit) use it.  Linking several inputs is refused with
 * CUDA_ERROR_NOT_SUPPORTED and a reason (the emulated GPU has no device linker); cubins and
 * relocatable objects hold machine code it cannot run (CUDA_ERROR_NO_BINARY_FOR_GPU).
 * The output options a program reads back (CU_JIT_WALL_TIME, the info and error log
 * buffers and their sizes) are written as CUDA writes them: cuModuleLoadDataEx's at its
 * return, a link's at cuLinkComplete (the option arrays must live as long as the link). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

struct CUlinkState_st {
    unsigned n;            /* the program's output options, written at cuLinkComplete */
    CUjit_option *opt;
    void **val;
    char *ptx;             /* the PTX input (owned), NULL before the first */
    int inputs;
    struct timespec t0;
};

double cu_ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Copy text into the log buffer of option `buf` sized by option `size` (in: capacity; out:
 * the bytes written, NUL included), truncated to fit. */
static void fill_log(unsigned n, CUjit_option *opt, void **val, CUjit_option buf,
                     CUjit_option size, const char *text)
{
    char *dst = NULL;
    int at = -1;
    for (unsigned i = 0; i < n; i++) {
        if (opt[i] == buf)
            dst = val[i];
        if (opt[i] == size)
            at = (int)i;
    }
    if (!dst || at < 0)
        return;
    size_t cap = (size_t)(uintptr_t)val[at], len = strlen(text);
    if (!cap)
        return;
    len = len < cap - 1 ? len : cap - 1;
    memcpy(dst, text, len);
    dst[len] = 0;
    val[at] = (void *)(uintptr_t)(len + 1);
}

void cu_jit_report(unsigned n, CUjit_option *opt, void **val, double ms, const char *info,
                   const char *error)
{
    if (!n || !opt || !val)
        return;
    for (unsigned i = 0; i < n; i++)
        if (opt[i] == CU_JIT_WALL_TIME) {
            float f = (float)ms;
            memcpy(&val[i], &f, sizeof f); /* the float in the slot, as CUDA writes it */
        }
    fill_log(n, opt, val, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, info);
    fill_log(n, opt, val, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, error);
}

API CUresult cuLinkCreate(unsigned int n, CUjit_option *options, void **values,
                          CUlinkState *out)
{
    if (!out || (n && (!options || !values)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlinkState_st *st = calloc(1, sizeof *st);
    if (!st)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *st = (struct CUlinkState_st){.n = n, .opt = options, .val = values};
    clock_gettime(CLOCK_MONOTONIC, &st->t0);
    *out = st;
    return CUDA_SUCCESS;
}

/* Add one input image (NUL-terminated PTX text or a fatbinary). */
static CUresult add_image(CUlinkState st, CUjitInputType type, const void *data,
                          const char *name)
{
    const char *ptx;
    char *owned = NULL;
    size_t len;
    CUresult r;
    if (type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_OBJECT || type == CU_JIT_INPUT_LIBRARY)
        return cu_fail(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLinkAdd: %s is machine code (type %d): "
                       "the emulated GPU runs PTX only", name ? name : "input", (int)type);
    if (type != CU_JIT_INPUT_PTX && type != CU_JIT_INPUT_FATBINARY)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuLinkAdd: input type %d (NVVM/LTO IR) is "
                       "not supported: add PTX or a fatbinary with PTX", (int)type);
    if (st->inputs)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuLinkAdd: %s: linking more than one input "
                       "is not supported (the emulated GPU has no device linker): load each "
                       "PTX as its own module", name ? name : "input");
    r = cu_image_to_ptx(data, &ptx, &len, &owned);
    if (r) {
        free(owned);
        return r;
    }
    if (!len || !(st->ptx = malloc(len + 1))) {
        free(owned);
        return len ? CUDA_ERROR_OUT_OF_MEMORY
                   : cu_fail(CUDA_ERROR_INVALID_PTX, "cuLinkAdd: empty PTX input");
    }
    memcpy(st->ptx, ptx, len);
    st->ptx[len] = 0;
    free(owned);
    st->inputs++;
    return CUDA_SUCCESS;
}

API CUresult cuLinkAddData(CUlinkState st, CUjitInputType type, void *data, size_t size,
                           const char *name, unsigned int n, CUjit_option *options,
                           void **values)
{
    (void)n; /* per-input options tune a compiler there is none of */
    (void)options;
    (void)values;
    if (!st || !data || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_JIT_INPUT_PTX && memchr(data, 0, size) == NULL)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkAddData: PTX must be NUL-terminated "
                       "within size (%zu bytes)", size);
    return add_image(st, type, data, name);
}

API CUresult cuLinkAddFile(CUlinkState st, CUjitInputType type, const char *path,
                           unsigned int n, CUjit_option *options, void **values)
{
    char *buf;
    CUresult r;
    (void)n;
    (void)options;
    (void)values;
    if (!st || !path)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = cu_read_file("cuLinkAddFile", path, &buf)))
        return r;
    r = add_image(st, type, buf, path);
    free(buf);
    return r;
}

API CUresult cuLinkComplete(CUlinkState st, void **cubinOut, size_t *sizeOut)
{
    if (!st || !cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (!st->ptx) {
        cu_jit_report(st->n, st->opt, st->val, cu_ms_since(&st->t0), "", "no input to link");
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkComplete: nothing was added");
    }
    *cubinOut = st->ptx;
    if (sizeOut)
        *sizeOut = strlen(st->ptx) + 1;
    cu_jit_report(st->n, st->opt, st->val, cu_ms_since(&st->t0), "", "");
    return CUDA_SUCCESS;
}

API CUresult cuLinkDestroy(CUlinkState st)
{
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    free(st->ptx);
    free(st);
    return CUDA_SUCCESS;
}
