/* A kernel runner over the CUDA driver API (gcc, -lcuda) serving runner_common.h's
 * protocol: kernel "FILE:NAME" is NAME of DIR/FILE.ptx (DIR on the command line), each module
 * loaded with cuModuleLoad on its first launch. */
#include <cuda.h>

#include "runner_common.h"

static const char *dir;
static struct { char file[64]; CUmodule mod; } mods[64];
static int nmods;

static CUresult module(const char *file, size_t len, CUmodule *mod)
{
    char path[4096];
    for (int i = 0; i < nmods; i++)
        if (strlen(mods[i].file) == len && !strncmp(mods[i].file, file, len)) {
            *mod = mods[i].mod;
            return CUDA_SUCCESS;
        }
    if (nmods == 64 || len >= sizeof mods[0].file)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(path, sizeof path, "%s/%.*s.ptx", dir, (int)len, file);
    CUresult r = cuModuleLoad(mod, path);
    if (!r) {
        memcpy(mods[nmods].file, file, len);
        mods[nmods++].mod = *mod;
    }
    return r;
}

static int runner_alloc(uint64_t size, uint64_t *addr)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemAlloc(&d, size);
    if (!r)
        r = cuMemsetD8(d, 0, size);
    *addr = d;
    return r;
}

static int runner_write(uint64_t addr, const void *src, uint64_t n)
{
    return cuMemcpyHtoD(addr, src, n);
}

static int runner_read(void *dst, uint64_t addr, uint64_t n)
{
    return cuMemcpyDtoH(dst, addr, n);
}

static int runner_launch(const char *name, const unsigned *grid, const unsigned *block,
                         unsigned shared, void **args)
{
    CUfunction f;
    CUmodule mod;
    const char *colon = strchr(name, ':');
    CUresult r = colon ? module(name, (size_t)(colon - name), &mod) : CUDA_ERROR_INVALID_VALUE;
    if (!r)
        r = cuModuleGetFunction(&f, mod, colon + 1);
    if (!r)
        r = cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                           NULL, args, NULL);
    return r ? r : cuCtxSynchronize();
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult r;
    if (argc < 2)
        return 2;
    if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuCtxCreate(&ctx, NULL, 0, dev))) {
        const char *s;
        cuGetErrorName(r, &s);
        fprintf(stderr, "drv_runner: %s\n", s);
        return 1;
    }
    dir = argv[1];
    int rc = runner_main();
    for (int i = 0; i < nmods; i++)
        cuModuleUnload(mods[i].mod);
    cuCtxDestroy(ctx);
    return rc;
}
