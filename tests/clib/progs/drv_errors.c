/* Error paths of libcuda.so.1, one per argument: prints "<case> <CUresult name> <reason>"
 * and exits 0 when the call failed with the CUresult CUDA specifies. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

const char *gdevCudaLastError(void); /* gdev-py's reason for the last failure */

static int expect(const char *what, CUresult got, CUresult want)
{
    const char *name = "?";
    cuGetErrorName(got, &name);
    printf("%s %s %s\n", what, name, gdevCudaLastError());
    return got == want ? 0 : 1;
}

/* After a kernel of the current context faulted: creating streams, events, modules, arrays,
 * pinned memory and memsets fail with its sticky error too. */
static int sticky_creations(CUmodule *mod)
{
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry k() { ret; }\n";
    CUDA_ARRAY_DESCRIPTOR ad = {.Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
                                .NumChannels = 1};
    const CUresult want = CUDA_ERROR_ILLEGAL_ADDRESS;
    CUstream s;
    CUevent e;
    CUarray a;
    void *host;
    int rc = expect("sticky-stream", cuStreamCreate(&s, 0), want);
    rc |= expect("sticky-event", cuEventCreate(&e, 0), want);
    rc |= expect("sticky-module", cuModuleLoadData(mod, ptx), want);
    rc |= expect("sticky-array", cuArrayCreate(&a, &ad), want);
    rc |= expect("sticky-hostalloc", cuMemHostAlloc(&host, 4096, 0), want);
    rc |= expect("sticky-memset", cuMemsetD8(0xdead0000ull, 0, 16), want);
    return rc;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    const char *madd = argc > 2 ? argv[2] : "";
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    size_t free_b, total;
    unsigned word = 7, n = 64;
    int rc;

    if (!strcmp(c, "no-daemon"))
        return expect(c, cuInit(0), CUDA_ERROR_NO_DEVICE);
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
        return expect("setup", CUDA_ERROR_UNKNOWN, CUDA_SUCCESS);
    if (!strcmp(c, "beyond-share")) {
        cuMemGetInfo(&free_b, &total);
        rc = expect(c, cuMemAlloc(&d, total + (1u << 20)), CUDA_ERROR_OUT_OF_MEMORY);
    } else if (!strcmp(c, "bad-pointer")) {
        rc = expect(c, cuMemcpyHtoD(0xdead0000ull, &word, sizeof word), CUDA_ERROR_INVALID_VALUE);
    } else if (!strcmp(c, "bad-free")) {
        rc = expect(c, cuMemFree(0xdead0000ull), CUDA_ERROR_INVALID_VALUE);
    } else if (!strcmp(c, "unknown-kernel")) {
        cuModuleLoad(&mod, madd);
        rc = expect(c, cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    } else if (!strcmp(c, "bad-image")) {
        rc = expect(c, cuModuleLoadData(&mod, "this is not a module"), CUDA_ERROR_INVALID_IMAGE);
    } else if (!strcmp(c, "bad-ptx")) {
        rc = expect(c, cuModuleLoadData(&mod, ".version 7.0\n.entry k(.param .u32 x[\n"),
                    CUDA_ERROR_INVALID_PTX);
    } else if (!strcmp(c, "cubin")) {
        static const char elf[64] = "\177ELF\2\1\1";
        rc = expect(c, cuModuleLoadData(&mod, elf), CUDA_ERROR_NO_BINARY_FOR_GPU);
    } else if (!strcmp(c, "missing-file")) {
        rc = expect(c, cuModuleLoad(&mod, "/nonexistent/module.ptx"), CUDA_ERROR_FILE_NOT_FOUND);
    } else if (!strcmp(c, "illegal-address")) {
        CUdeviceptr a, bad = 0xdead0000ull;
        cuModuleLoad(&mod, madd);
        cuModuleGetFunction(&f, mod, "add");
        cuMemAlloc(&a, n * n * 4);
        void *params[] = {&a, &a, &bad, &n};
        CUresult r = cuLaunchKernel(f, 4, 4, 1, 16, 16, 1, 0, NULL, params, NULL);
        rc = expect(c, r ? r : cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= expect("sticky", cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
        CUdeviceptr more;   /* every later call of the context fails, allocations too */
        rc |= expect("sticky", cuMemAlloc(&more, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= expect("sticky", cuMemFree(a), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= sticky_creations(&mod);
    } else if (!strcmp(c, "fault-then-copy")) {
        /* the usual program: launch, then read the result back, no synchronization */
        CUdeviceptr a, bad = 0xdead0000ull;
        unsigned out[4];
        cuModuleLoad(&mod, madd);
        cuModuleGetFunction(&f, mod, "add");
        cuMemAlloc(&a, n * n * 4);
        void *params[] = {&a, &a, &bad, &n};
        CUresult r = cuLaunchKernel(f, 4, 4, 1, 16, 16, 1, 0, NULL, params, NULL);
        rc = expect(c, r ? r : cuMemcpyDtoH(out, a, sizeof out), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= expect("sticky", cuMemcpyHtoD(a, out, sizeof out), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= expect("sticky", cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
        CUdeviceptr more;   /* known to libcuda only through the copy: the daemon refuses */
        rc |= expect("sticky", cuMemAlloc(&more, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
        rc |= sticky_creations(&mod);
    } else if (!strcmp(c, "bad-launch")) {
        cuModuleLoad(&mod, madd);
        cuModuleGetFunction(&f, mod, "add");
        cuMemAlloc(&d, 64);
        void *params[] = {&d, &d, &d, &n};
        rc = expect(c, cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
                    CUDA_ERROR_INVALID_VALUE);
    } else if (!strcmp(c, "no-context")) {
        cuCtxPopCurrent(&ctx);
        rc = expect(c, cuMemAlloc(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
        cuCtxPushCurrent(ctx);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    cuCtxDestroy(ctx);
    return rc;
}
