/* The JIT linker with several inputs: cuLinkAddData of two PTX translation units (a kernel of
 * one calls an extern function of the other and bumps an extern variable, each has an internal
 * helper of one name), cuLinkComplete's image written to OUT and loaded by cuModuleLoadData;
 * then an unresolved reference refused at cuLinkComplete with its reason in the error log.
 * Usage: drv_link2 A_PTX B_PTX OUT. */
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

/* kernel `k` of mod over 32 threads; element i of its output */
static int launch(CUmodule mod, const char *k, CUdeviceptr out, void *host, unsigned i,
                  unsigned *v)
{
    CUfunction f;
    void *args[] = {&out};
    CK(cuModuleGetFunction(&f, mod, k));
    CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(host, out, 32 * 4));
    memcpy(v, (char *)host + 4 * i, 4);
    return 0;
}

int main(int argc, char **argv)
{
    char *a = argc > 3 ? slurp(argv[1], NULL) : NULL, *b = argc > 3 ? slurp(argv[2], NULL) : NULL;
    char error[512], host[128];
    CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[] = {error, (void *)(uintptr_t)sizeof error};
    CUcontext ctx;
    CUdevice dev;
    CUlinkState st;
    CUmodule mod;
    CUdeviceptr out, counter;
    void *image;
    size_t size, csize;
    unsigned k5, g0, h0, c;
    float twice;
    if (!a || !b)
        return 2;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuLinkCreate(2, opt, val, &st));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, a, strlen(a) + 1, "a.ptx", 0, NULL, NULL));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, b, strlen(b) + 1, "b.ptx", 0, NULL, NULL));
    CK(cuLinkComplete(st, &image, &size));
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(image, 1, size, f) != size || fclose(f))
        return 3;
    CK(cuModuleLoadData(&mod, image));
    CK(cuLinkDestroy(st));
    CK(cuMemAlloc(&out, 32 * 4));
    if (launch(mod, "k", out, host, 5, &k5) || launch(mod, "g", out, host, 0, &g0)
        || launch(mod, "h", out, host, 0, &h0))
        return 1;
    CK(cuModuleGetGlobal(&counter, &csize, mod, "counter"));
    CK(cuMemcpyDtoH(&c, counter, 4));
    memcpy(&twice, &k5, 4);
    printf("linked k[5]=%g g[0]=%u h[0]=%u counter=%u size=%zu\n", twice, g0, h0, c, csize);
    CK(cuModuleUnload(mod));

    val[1] = (void *)(uintptr_t)sizeof error; /* the first link wrote its log's length */
    CK(cuLinkCreate(2, opt, val, &st));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, a, strlen(a) + 1, "a.ptx", 0, NULL, NULL));
    CK(cuLinkAddData(st, CU_JIT_INPUT_PTX, a + strlen(a), 1, "empty.ptx", 0, NULL, NULL) ==
       CUDA_ERROR_INVALID_PTX ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CUresult r = cuLinkComplete(st, &image, &size);
    printf("unresolved=%s log=%d\n", name(r),
           strstr(error, "unresolved reference to 'counter' (declared extern in a.ptx")
           != NULL);
    CK(cuLinkDestroy(st));
    CK(cuCtxDestroy(ctx));
    free(a);
    free(b);
    return 0;
}
