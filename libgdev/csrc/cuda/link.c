/* The JIT linker (cuLinkCreate .. cuLinkComplete) and the JIT options' logs.
 *
 * gdevd runs PTX, so "linking" keeps the PTX: each input (PTX text, a file, a fatbinary's PTX
 * entry) is kept as a text, and cuLinkComplete hands back a linked-module image of them
 * (linkimage.c; one input too) that the daemon links as nvlink would
 * (gdevd/gpu/ptx/unitlink.py).  cuLinkComplete has the daemon link it once in the current
 * context, so unresolved and duplicate symbols fail there, as CUDA's do, with the reason in
 * CU_JIT_ERROR_LOG_BUFFER (CUDA_ERROR_INVALID_PTX); the daemon keeps the linked module, so
 * the cuModuleLoadData of the image that follows costs no second link.  Cubins, relocatable
 * objects and libraries of them hold machine code it cannot run
 * (CUDA_ERROR_NO_BINARY_FOR_GPU), as does a fatbinary whose PTX is only for newer GPUs than
 * the device while it has machine code for it (CUDA would link that machine code).
 * The output options a program reads back (CU_JIT_WALL_TIME, the info and error log
 * buffers and their sizes) are written as CUDA writes them: cuModuleLoadDataEx's at its
 * return, a link's at cuLinkComplete (the option arrays must live as long as the link). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

struct CUlinkState_st {
    unsigned n;            /* the program's output options, written at cuLinkComplete */
    CUjit_option *opt;
    void **val;
    char *ptx[CU_LINK_MAX_INPUTS];  /* the inputs' PTX texts and names (owned) */
    char *name[CU_LINK_MAX_INPUTS];
    unsigned inputs;
    char *image;           /* cuLinkComplete's image (owned) */
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

/* The device's compute capability as major * 10 + minor (75 when it cannot be asked). */
static int device_cc(void)
{
    CUdevice dev;
    int major, minor;
    if (cuCtxGetDevice(&dev) || cuDeviceComputeCapability(&major, &minor, dev))
        return 75;
    return major * 10 + minor;
}

/* Keep one input's PTX (len bytes at ptx) under name. */
static CUresult keep(CUlinkState st, const char *ptx, size_t len, const char *name)
{
    char label[32];
    len = strnlen(ptx, len); /* a fatbinary's PTX entry is padded with NULs */
    if (!len)
        return cu_fail(CUDA_ERROR_INVALID_PTX, "cuLinkAdd: %s: empty PTX input",
                       name ? name : "input");
    snprintf(label, sizeof label, "input%u", st->inputs);
    char *text = malloc(len + 1), *n = strdup(name ? name : label);
    if (!text || !n) {
        free(text);
        free(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(text, ptx, len);
    text[len] = 0;
    st->ptx[st->inputs] = text;
    st->name[st->inputs++] = n;
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
    const char *what = name ? name : "input";
    if (type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_OBJECT || type == CU_JIT_INPUT_LIBRARY)
        return cu_fail(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLinkAdd: %s is machine code (type %d: "
                       "a cubin, an object or a library of them): the emulated GPU runs PTX "
                       "only", what, (int)type);
    if (type != CU_JIT_INPUT_PTX && type != CU_JIT_INPUT_FATBINARY)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuLinkAdd: input type %d (NVVM/LTO IR) is "
                       "not supported: add PTX or a fatbinary with PTX", (int)type);
    if (st->image)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkAdd: the link is already complete");
    if (st->inputs == CU_LINK_MAX_INPUTS)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkAdd: %s: more than %d inputs", what,
                       CU_LINK_MAX_INPUTS);
    if (type == CU_JIT_INPUT_FATBINARY && cu_fatbin_sass_only_for(data, device_cc()))
        return cu_fail(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuLinkAdd: %s: its PTX is for newer GPUs "
                       "than the device and the rest is machine code", what);
    if (cu_is_linked_image(data))
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuLinkAdd: %s is a linked image already: "
                       "add its inputs instead", what);
    if ((r = cu_image_to_ptx(data, &ptx, &len, &owned)) == CUDA_SUCCESS)
        r = keep(st, ptx, len, name);
    free(owned);
    return r;
}

static void drop_inputs(CUlinkState st)
{
    for (unsigned i = 0; i < st->inputs; i++) {
        free(st->ptx[i]);
        free(st->name[i]);
    }
    st->inputs = 0;
}

CUresult cu_prelinked_image(const void *const *units, char **image, size_t *size)
{
    struct CUlinkState_st *st = calloc(1, sizeof *st);
    CUresult r = st ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY, skipped = CUDA_SUCCESS;
    char name[32];
    for (int i = 0; !r && units[i]; i++) {
        snprintf(name, sizeof name, "unit%d", i);
        r = add_image(st, CU_JIT_INPUT_FATBINARY, units[i], name);
        if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) /* left out: the device runtime's machine code */
            skipped = r, r = CUDA_SUCCESS;
    }
    if (!r && !st->inputs)
        r = skipped ? skipped : cu_fail(CUDA_ERROR_INVALID_IMAGE, "a device-linked image "
                                        "without units");
    if (!r)
        r = cu_linked_image(st->inputs, st->name, st->ptx, image, size);
    if (st)
        drop_inputs(st);
    free(st);
    return r;
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

/* Have the daemon link st's image once in the current context (one input too, so that its
 * unresolved references fail here as CUDA's do): its reason if it cannot. */
static CUresult check_link(CUlinkState st, size_t size)
{
    CUcontext c;
    CUmodule m;
    CUresult r = cu_current(&c);
    if (!r && !(r = cu_load_ptx(c, st->image, size, &m)))
        cuModuleUnload(m);
    return r;
}

API CUresult cuLinkComplete(CUlinkState st, void **cubinOut, size_t *sizeOut)
{
    size_t size;
    CUresult r;
    if (!st || !cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (!st->inputs) {
        cu_jit_report(st->n, st->opt, st->val, cu_ms_since(&st->t0), "", "no input to link");
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkComplete: nothing was added");
    }
    free(st->image);
    st->image = NULL;
    if (!(r = cu_linked_image(st->inputs, st->name, st->ptx, &st->image, &size)))
        r = check_link(st, size);
    cu_jit_report(st->n, st->opt, st->val, cu_ms_since(&st->t0), "",
                  r ? gdevCudaLastError() : "");
    if (r)
        return r;
    *cubinOut = st->image;
    if (sizeOut)
        *sizeOut = size;
    return CUDA_SUCCESS;
}

API CUresult cuLinkDestroy(CUlinkState st)
{
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    drop_inputs(st);
    free(st->image);
    free(st);
    return CUDA_SUCCESS;
}
