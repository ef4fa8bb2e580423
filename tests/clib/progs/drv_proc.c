/* cuGetProcAddress by CUDA base name and version, as runtimes and interposers call it:
 * prints "proc ok" when each lookup gives the versioned entry point cuda.h names. */
#include <cuda.h>
#include <stdio.h>

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                        unsigned int flags, CUdevice dev);
CUresult cu_get_proc_v1(const char *, void **, int, cuuint64_t) __asm__("cuGetProcAddress");

static int check(const char *name, int version, void *want, CUdriverProcAddressQueryResult st)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult got;
    CUresult r = cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &got);
    if (fn != want || got != st || (r == CUDA_SUCCESS) != (st == CU_GET_PROC_ADDRESS_SUCCESS)) {
        printf("%s@%d: %p status %d, want %p status %d\n", name, version, fn, got, want, st);
        return 1;
    }
    return 0;
}

int main(void)
{
    void *fn = NULL;
    int bad = 0;
    bad |= check("cuMemAlloc", 13000, (void *)cuMemAlloc, CU_GET_PROC_ADDRESS_SUCCESS);
    bad |= check("cuCtxCreate", 12080, (void *)cuCtxCreate, CU_GET_PROC_ADDRESS_SUCCESS);
    bad |= check("cuCtxCreate", 11040, (void *)cuCtxCreate_v3, CU_GET_PROC_ADDRESS_SUCCESS);
    bad |= check("cuCtxCreate", 4000, (void *)cuCtxCreate_v2, CU_GET_PROC_ADDRESS_SUCCESS);
    bad |= check("cuLaunchKernel", 3000, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    bad |= check("cuNoSuchCall", 13000, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    bad |= cu_get_proc_v1("cuInit", &fn, 12000, 0) != CUDA_SUCCESS || fn != (void *)cuInit;
    printf(bad ? "proc failed\n" : "proc ok\n");
    return bad;
}
