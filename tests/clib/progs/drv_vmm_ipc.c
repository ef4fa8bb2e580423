/* Two processes share device memory as the CUDA sample memMapIPCDrv does: the parent
 * creates an allocation with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR and exports it with no
 * context current (as the sample, which destroys its contexts first), then maps it in a
 * context of its own, fills it and passes the descriptor over a Unix socket (SCM_RIGHTS);
 * the child (its own gdevd context, on vGPU CHILD_DEV) imports it, maps it, releases the
 * handle, checks the parent's data with a kernel and writes its answer into the shared
 * memory, which the parent reads.  Then the parent releases its handle (the export is
 * withdrawn: a second import fails) while the child's mapping keeps working; the child
 * destroys its context before unmapping and freeing its range, as the sample does.
 * Usage: drv_vmm_ipc MADD_PTX CHILD_DEV.  Prints one line per process. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drv_check.h"
#include "fdpass.h"

#define SIZE (2u << 20)
#define WORDS (SIZE / 4)

static const char *name_of(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static int step(int sock, char *byte) /* wait for the other side's next byte */
{
    return read(sock, byte, 1) == 1 ? 0 : -1;
}

static CUmemAllocationProp prop_of(CUdevice dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static int map_rw(CUdeviceptr *va, CUmemGenericAllocationHandle h, CUdevice dev)
{
    CUmemAccessDesc a = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, dev},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemAddressReserve(va, SIZE, 0, 0, 0));
    CK(cuMemMap(*va, SIZE, 0, h, 0));
    CK(cuMemSetAccess(*va, SIZE, &a, 1));
    return 0;
}

static int child(int sock, const char *ptx, int devno)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction add;
    CUmemGenericAllocationHandle h, again;
    CUdeviceptr va, sum;
    char byte;
    char got;
    int fd = recv_fd(sock, &got, 1);
    unsigned n = 512, *out = malloc(SIZE / 2);

    CK(cuInit(0));
    CK(cuDeviceGet(&dev, devno));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoad(&mod, ptx));
    CK(cuModuleGetFunction(&add, mod, "add"));
    CK(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    if (map_rw(&va, h, dev))
        return 1;
    CK(cuMemRelease(h));                          /* the mapping keeps the memory */
    CK(cuMemAlloc(&sum, SIZE / 2));
    void *params[] = {&va, &va, &sum, &n};     /* sum = 2 * the parent's first half */
    CK(cuLaunchKernel(add, n / 16, n / 16, 1, 16, 16, 1, 0, NULL, params, NULL));
    CK(cuMemcpyDtoH(out, sum, SIZE / 2));
    unsigned wrong = 0;
    for (unsigned i = 0; i < WORDS / 2; i++)
        wrong += out[i] != 2 * (i * 5u + 1u);
    CK(cuMemcpyDtoD(va + SIZE / 2, sum, SIZE / 2));   /* the answer, into the shared half */
    CK(cuCtxSynchronize());
    if (write(sock, "a", 1) != 1 || step(sock, &byte))  /* parent releases its handle */
        return 1;
    CUresult second = cuMemImportFromShareableHandle(&again, (void *)(uintptr_t)fd,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CK(cuMemcpyDtoH(out, va, 4096));              /* still mapped here, still the data */
    CK(cuCtxDestroy(ctx));                        /* before the unmap, as the sample */
    CUresult unmapped = cuMemUnmap(va, SIZE), freed = cuMemAddressFree(va, SIZE);
    printf("child wrong=%u reimport_after_release=%s still_mapped=%d unmap_after_destroy=%s "
           "free_after_destroy=%s\n", wrong, name_of(second), out[7] == 7u * 5u + 1u,
           name_of(unmapped), name_of(freed));
    close(fd);
    free(out);
    return 0;
}

static int parent(int sock, pid_t pid)
{
    CUdevice dev;
    CUcontext ctx;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    int fd, status;
    char byte;
    unsigned *host = malloc(SIZE);

    size_t gran;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CUmemAllocationProp prop = prop_of(dev);      /* no context yet, as the sample */
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemCreate(&h, SIZE, &prop, 0));
    CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    if (map_rw(&va, h, dev))
        return 1;
    for (unsigned i = 0; i < WORDS; i++)
        host[i] = i * 5u + 1u;
    CK(cuMemcpyHtoD(va, host, SIZE));
    if (send_fd(sock, fd, "f", 1) || step(sock, &byte))
        return 1;
    CK(cuMemcpyDtoH(host, va + SIZE / 2, SIZE / 2));
    unsigned wrong = 0;
    for (unsigned i = 0; i < WORDS / 2; i++)
        wrong += host[i] != 2 * (i * 5u + 1u);
    CK(cuMemRelease(h));                          /* withdraws the export; mapped here */
    if (write(sock, "r", 1) != 1 || waitpid(pid, &status, 0) != pid)
        return 1;
    CK(cuMemUnmap(va, SIZE));
    CK(cuMemAddressFree(va, SIZE));
    CK(cuCtxDestroy(ctx));
    close(fd);
    free(host);
    printf("parent granularity=%zu child_answer_wrong=%u child_exit=%d\n", gran, wrong,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

int main(int argc, char **argv)
{
    int sv[2];
    if (argc < 3 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 2;
    fflush(stdout);
    pid_t pid = fork();                          /* before any CUDA call, as the sample */
    if (pid < 0)
        return 2;
    if (pid == 0) {
        close(sv[0]);
        int rc = child(sv[1], argv[1], atoi(argv[2]));
        fflush(stdout);
        _exit(rc);
    }
    close(sv[1]);
    return parent(sv[0], pid);
}
