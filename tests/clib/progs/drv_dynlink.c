/* The legacy entry points a program finds by name with dlsym, as NVIDIA's matrixMulDynlinkJIT
 * does for all of them before it starts: the unversioned names of the _v2 functions, the
 * CUDA 3.1 forms (refused, naming their successor), cuCtxAttach/Detach, texture references
 * (modules have none; a created one keeps its state), graphics interop (no valid resource)
 * and cuGetExportTable.  Prints "dynlink ok" when every check holds. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <string.h>

#include "drv_check.h"

typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*ctx_out_fn)(CUcontext *);
typedef CUresult (*any_fn)(void);

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fprintf(stderr, "missing %s\n", name);
    return p;
}

static int names(void *lib, CUcontext ctx)
{
    ctx_out_fn pop = (ctx_out_fn)sym(lib, "cuCtxPopCurrent");
    ctx_fn push = (ctx_fn)sym(lib, "cuCtxPushCurrent");
    any_fn v1_alloc = (any_fn)sym(lib, "cuMemAlloc");
    CUcontext got = NULL;
    EXPECT(pop && push && v1_alloc);
    CK(pop(&got));
    EXPECT(got == ctx);
    CK(push(ctx));
    EXPECT(v1_alloc() == CUDA_ERROR_NOT_SUPPORTED);   /* the 32-bit form */
    return 0;
}

static int attach(CUcontext ctx)
{
    CUcontext a = NULL, cur = NULL;
    CK(cuCtxAttach(&a, 0));
    EXPECT(a == ctx);
    EXPECT(cuCtxAttach(&a, 1) == CUDA_ERROR_INVALID_VALUE);
    CK(cuCtxDetach(ctx));            /* the attach's use: the context stays */
    CK(cuCtxGetCurrent(&cur));
    EXPECT(cur == ctx);
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 64));
    CK(cuMemFree(d));
    return 0;
}

static int texrefs(CUmodule mod)
{
    CUtexref r, none;
    CUarray_format fmt;
    CUaddress_mode am;
    CUfilter_mode fm;
    unsigned flags;
    int ch;
    float border[4] = {1, 2, 3, 4}, back[4];
    EXPECT(cuModuleGetTexRef(&none, mod, "tex") == CUDA_ERROR_NOT_FOUND);
    CK(cuTexRefCreate(&r));
    CK(cuTexRefSetFormat(r, CU_AD_FORMAT_UNSIGNED_INT8, 4));
    CK(cuTexRefSetAddressMode(r, 1, CU_TR_ADDRESS_MODE_CLAMP));
    CK(cuTexRefSetFilterMode(r, CU_TR_FILTER_MODE_LINEAR));
    CK(cuTexRefSetFlags(r, CU_TRSF_NORMALIZED_COORDINATES));
    CK(cuTexRefSetBorderColor(r, border));
    CK(cuTexRefGetFormat(&fmt, &ch, r));
    CK(cuTexRefGetAddressMode(&am, r, 1));
    CK(cuTexRefGetFilterMode(&fm, r));
    CK(cuTexRefGetFlags(&flags, r));
    CK(cuTexRefGetBorderColor(back, r));
    EXPECT(fmt == CU_AD_FORMAT_UNSIGNED_INT8 && ch == 4 && am == CU_TR_ADDRESS_MODE_CLAMP);
    EXPECT(fm == CU_TR_FILTER_MODE_LINEAR && flags == CU_TRSF_NORMALIZED_COORDINATES);
    EXPECT(!memcmp(border, back, sizeof back));
    EXPECT(cuTexRefSetFormat(r, CU_AD_FORMAT_FLOAT, 3) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTexRefSetAddressMode(r, 3, CU_TR_ADDRESS_MODE_WRAP) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuParamSetTexRef(NULL, CU_PARAM_TR_DEFAULT, r) == CUDA_ERROR_INVALID_VALUE);
    CK(cuTexRefDestroy(r));
    return 0;
}

static int interop(void)
{
    CUgraphicsResource res = (CUgraphicsResource)0x10;
    const void *table = (const void *)1;
    CUuuid id = {{0}};
    EXPECT(cuGraphicsMapResources(0, NULL, NULL) == CUDA_SUCCESS);
    EXPECT(cuGraphicsMapResources(1, &res, NULL) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuGraphicsUnregisterResource(res) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuGetExportTable(&table, &id) == CUDA_ERROR_NOT_SUPPORTED && !table);
    return 0;
}

int main(void)
{
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry k() { ret; }\n";
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    EXPECT(lib);
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoadData(&mod, ptx));
    if (names(lib, ctx) || attach(ctx) || texrefs(mod) || interop())
        return 1;
    CK(cuCtxDestroy(ctx));
    printf("dynlink ok\n");
    return 0;
}
