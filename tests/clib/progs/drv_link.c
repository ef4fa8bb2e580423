/* The JIT linker as CUDA's ptxjit sample uses it: cuLinkCreate with output options (wall
 * time, info and error logs), cuLinkAddData of PTX text, cuLinkComplete, cuModuleLoadData of
 * the image; the same PTX added twice (a duplicate definition at cuLinkComplete, its reason
 * in the error log); then cuLinkAddFile, and what is refused, each with its CUresult; and
 * cuModuleLoadDataEx's error log.  Usage: drv_link MADD_PTX. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

static const char *name(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

/* madd of n x n through the module loaded from `image` */
static int madd(const void *image, unsigned n)
{
    CUmodule mod;
    CUfunction f;
    CUdeviceptr a, c;
    unsigned bytes = n * n * 4, *h = malloc(bytes), *out = malloc(bytes);
    for (unsigned i = 0; i < n * n; i++)
        h[i] = i;
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&f, mod, "add"));
    CK(cuMemAlloc(&a, bytes));
    CK(cuMemAlloc(&c, bytes));
    CK(cuMemcpyHtoD(a, h, bytes));
    void *args[] = {&a, &a, &c, &n};
    CK(cuLaunchKernel(f, (n + 15) / 16, (n + 15) / 16, 1, 16, 16, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(out, c, bytes));
    for (unsigned i = 0; i < n * n; i++)
        if (out[i] != 2 * i)
            return 1;
    CK(cuModuleUnload(mod));
    free(h);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    long size = 0;
    char *ptx = argc > 1 ? slurp(argv[1], &size) : NULL;
    char info[256], error[256];
    CUjit_option opt[] = {CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER,
                          CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                          CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void *val[] = {NULL, info, (void *)(uintptr_t)sizeof info, error,
                   (void *)(uintptr_t)sizeof error, (void *)1};
    CUdevice dev;
    CUcontext ctx;
    CUlinkState st;
    void *image;
    size_t image_size;
    float ms;
    if (!ptx)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));

    CK(cuLinkCreate(6, opt, val, &st));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx, (size_t)size + 1, "madd.ptx", 0, NULL, NULL));
    CK(cuLinkComplete(st, &image, &image_size));
    memcpy(&ms, &val[0], sizeof ms);
    if (madd(image, 40))
        return 1;
    printf("linked size_ok=%d ms_ok=%d info_len=%u\n", image_size > (size_t)size,
           ms >= 0.0f && ms < 60000.0f, (unsigned)(uintptr_t)val[2]);
    CK(cuLinkDestroy(st));

    /* the same PTX twice: its kernel defined twice, refused at cuLinkComplete with the log */
    val[4] = (void *)(uintptr_t)sizeof error;
    CK(cuLinkCreate(6, opt, val, &st));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx, (size_t)size + 1, "madd.ptx", 0, NULL, NULL));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx, (size_t)size + 1, "again", 0, NULL, NULL));
    CUresult twice = cuLinkComplete(st, &image, &image_size);
    printf("twice=%s log_names_both=%d\n", name(twice),
           strstr(error, "duplicate definition of 'add'") && strstr(error, "madd.ptx and again"));
    CK(cuLinkDestroy(st));

    CK(cuLinkCreate(0, NULL, NULL, &st));
    CK(cuLinkAddFile(st, CU_JIT_INPUT_PTX, argv[1], 0, NULL, NULL));
    CK(cuLinkComplete(st, &image, NULL));
    if (madd(image, 17))
        return 1;
    CUresult missing = cuLinkAddFile(st, CU_JIT_INPUT_PTX, "/nonexistent.ptx", 0, NULL, NULL);
    CK(cuLinkDestroy(st));

    CK(cuLinkCreate(0, NULL, NULL, &st));
    CUresult cubin = cuLinkAddData(st, CU_JIT_INPUT_CUBIN, "\177ELF", 5, "k.cubin", 0, NULL,
                                   NULL);
    CUresult library = cuLinkAddData(st, CU_JIT_INPUT_LIBRARY, "!<arch>\n", 9, "k.a", 0, NULL,
                                     NULL);
    CUresult unterminated = cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx, 8, "short", 0, NULL, NULL);
    CUresult empty = cuLinkComplete(st, &image, NULL);
    CK(cuLinkDestroy(st));
    printf("refused file=%s cubin=%s library=%s unterminated=%s empty=%s\n", name(missing),
           name(cubin), name(library), name(unterminated), name(empty));

    CUmodule mod;
    val[4] = (void *)(uintptr_t)sizeof error;
    CUresult bad = cuModuleLoadDataEx(&mod, ".version 9.0\n.target sm_75\n.address_size 64\n"
                                      ".visible .entry k() { bogus.u32 %r1; }\n", 6, opt, val);
    printf("loadex=%s log_has_reason=%d\n", name(bad),
           (unsigned)(uintptr_t)val[4] > 1 && strstr(error, "bogus") != NULL);
    CK(cuCtxDestroy(ctx));
    free(ptx);
    return 0;
}
