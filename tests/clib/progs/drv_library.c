/* Context-independent loading (CUDA 12's cuLibrary and cuKernel calls, linked with gdev-py's
 * libcuda.so.1): a library loaded with no context, its kernels enumerated and described,
 * then used in two contexts, each with its own copy of the library's global; a CUkernel
 * launched as a CUfunction; the documented error cases.  Prints "drv_library ok" on
 * success; the first failure names its line. */
#include <string.h>

#include "drv_check.h"

static const char ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .global .align 4 .u32 base = 5;\n\n"
    ".visible .entry addbase(.param .u64 out, .param .u32 v)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<4>;\n    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [v];\n    ld.global.u32 %r2, [base];\n    add.s32 %r3, %r1, %r2;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    st.global.u32 [%rd2], %r3;\n    ret;\n}\n\n"
    ".visible .entry noop()\n{\n    ret;\n}\n";

/* In the current context: set its copy of `base`, launch k (as a CUfunction and through
 * cuKernelGetFunction) and read what it wrote. */
static int use(CUlibrary lib, CUkernel k, unsigned mine, unsigned *got)
{
    CUdeviceptr base, out;
    size_t size = 0;
    CUfunction f;
    CUmodule mod, again;
    unsigned v = 10, r1 = 0, r2 = 0;
    CK(cuLibraryGetGlobal(&base, &size, lib, "base"));
    EXPECT(size == 4);
    CK(cuMemcpyHtoD(base, &mine, 4));
    CK(cuMemAlloc(&out, 4));
    void *args[] = {&out, &v};
    CK(cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(&r1, out, 4));
    CK(cuKernelGetFunction(&f, k));
    v = 20;
    CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(&r2, out, 4));
    EXPECT(r1 == 10 + mine && r2 == 20 + mine);
    CK(cuLibraryGetModule(&mod, lib));
    CK(cuFuncGetModule(&again, f));
    EXPECT(mod == again);
    const char *name = NULL;
    CK(cuFuncGetName(&name, (CUfunction)(void *)k));
    EXPECT(!strcmp(name, "addbase"));
    CK(cuMemFree(out));
    *got = r1;
    return 0;
}

int main(void)
{
    CUlibrary lib, bad;
    CUkernel k, all[4] = {0}, other;
    CUcontext a, b;
    unsigned n = 0, ra = 0, rb = 0;
    CK(cuInit(0));
    CK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0)); /* no context */
    CK(cuLibraryGetKernelCount(&n, lib));
    EXPECT(n == 2);
    CK(cuLibraryEnumerateKernels(all, 4, lib));
    EXPECT(all[0] && all[1] && !all[2]);
    CK(cuLibraryGetKernel(&k, lib, "addbase"));
    EXPECT(k == all[0] || k == all[1]);
    EXPECT(cuLibraryGetKernel(&other, lib, "nope") == CUDA_ERROR_NOT_FOUND);
    const char *name = NULL;
    CK(cuKernelGetName(&name, k));
    EXPECT(!strcmp(name, "addbase"));
    size_t off = 9, size = 0;
    CK(cuKernelGetParamInfo(k, 1, &off, &size));
    EXPECT(off == 8 && size == 4);
    EXPECT(cuKernelGetParamInfo(k, 2, &off, &size) == CUDA_ERROR_INVALID_VALUE);
    int threads = 0, ptxv = 0;
    CK(cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
    CK(cuKernelGetAttribute(&ptxv, CU_FUNC_ATTRIBUTE_PTX_VERSION, k, 0));
    EXPECT(threads > 0 && ptxv == 75);
    CK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024, k, 0));
    CK(cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_SHARED, 0));
    CUlibrary owner = NULL;
    CK(cuKernelGetLibrary(&owner, k));
    EXPECT(owner == lib);
    CUdeviceptr m;
    EXPECT(cuLibraryGetManaged(&m, NULL, lib, "base") == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuLibraryGetManaged(&m, NULL, lib, "nope") == CUDA_ERROR_NOT_FOUND);
    EXPECT(cuKernelGetFunction((CUfunction *)&m, k) == CUDA_ERROR_INVALID_CONTEXT);
    /* the legacy launch API keeps state in a module's function, which a CUkernel is not */
    EXPECT(cuFuncSetBlockShape((CUfunction)(void *)k, 1, 1, 1) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuParamSetSize((CUfunction)(void *)k, 8) == CUDA_ERROR_INVALID_VALUE);
    /* two contexts, two copies of `base` */
    CK(cuCtxCreate(&a, NULL, 0, 0));
    CK(cuCtxCreate(&b, NULL, 0, 1));
    if (use(lib, k, 100, &rb))
        return 1;
    CK(cuCtxSetCurrent(a));
    if (use(lib, k, 7, &ra))
        return 1;
    EXPECT(ra == 17 && rb == 110);
    CK(cuLibraryUnload(lib));
    EXPECT(cuLibraryLoadData(&bad, "not ptx at all", NULL, NULL, 0, NULL, NULL, 0) ==
           CUDA_ERROR_INVALID_IMAGE);
    EXPECT(cuLibraryLoadFromFile(&bad, "/nonexistent.ptx", NULL, NULL, 0, NULL, NULL, 0) ==
           CUDA_ERROR_FILE_NOT_FOUND);
    CK(cuCtxDestroy(a));
    CK(cuCtxDestroy(b));
    printf("drv_library ok\n");
    return 0;
}
