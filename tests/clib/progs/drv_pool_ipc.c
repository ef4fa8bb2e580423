/* Two processes share a memory pool as the CUDA sample streamOrderedAllocationIPC does: the
 * parent creates a pool with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, allocates from it in
 * a stream, fills the block and exports the pool (a file descriptor, passed over a Unix
 * socket) and the pointer (64 bytes of export data); a second shareable pool's pointer goes
 * along.  The child (its own gdevd context on vGPU CHILD_DEV) imports the pool, fails to
 * import the other pool's pointer through it, imports its own, checks the parent's data,
 * writes its answer into the second half and frees the pointer (which closes it).  The
 * parent reads the answer, then frees its blocks and destroys its pools.
 * Usage: drv_pool_ipc CHILD_DEV.  Prints one line per process. */
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

#define SIZE (1u << 20)
#define WORDS (SIZE / 4)

struct exports {
    CUmemPoolPtrExportData mine, other; /* the block of the sent pool, another pool's */
};

static const char *name_of(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static CUmemPoolProps props_of(CUdevice dev, CUmemAllocationHandleType type)
{
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.handleTypes = type;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static int child(int sock, int devno)
{
    CUdevice dev;
    CUcontext ctx;
    CUmemoryPool pool, attr_pool = NULL;
    CUdeviceptr p = 0, wrong_p = 0, fresh;
    struct exports x;
    int fd = recv_fd(sock, &x, sizeof x);
    unsigned *host = malloc(SIZE);

    EXPECT(fd >= 0);
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, devno));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuMemPoolImportFromShareableHandle(&pool, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    CUresult other = cuMemPoolImportPointer(&wrong_p, pool, &x.other);
    CK(cuMemPoolImportPointer(&p, pool, &x.mine));
    CUresult alloc = cuMemAllocFromPoolAsync(&fresh, 4096, pool, NULL);
    CK(cuPointerGetAttribute(&attr_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    CK(cuMemcpyDtoH(host, p, SIZE / 2));
    unsigned wrong = 0;
    for (unsigned i = 0; i < WORDS / 2; i++) {
        wrong += host[i] != i * 3u + 7u;
        host[i] = ~host[i];
    }
    CK(cuMemcpyHtoD(p + SIZE / 2, host, SIZE / 2));  /* the answer */
    CK(cuMemFreeAsync(p, NULL));                      /* closes the import */
    CUresult twice = cuMemFree(p);
    CK(cuMemPoolDestroy(pool));
    CK(cuCtxDestroy(ctx));
    printf("child other_pool=%s alloc_from_import=%s attr_pool=%d data_wrong=%u "
           "free_twice=%s\n", name_of(other), name_of(alloc), attr_pool == pool, wrong,
           name_of(twice));
    free(host);
    return write(sock, "a", 1) == 1 ? 0 : 1;
}

static int parent(int sock, pid_t pid)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUmemoryPool pool, other, plain, self_import;
    CUdeviceptr p, q, r;
    struct exports x;
    int fd, types, status;
    char byte;
    unsigned *host = malloc(SIZE);

    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDeviceGetAttribute(&types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, dev));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemPoolProps props = props_of(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CK(cuMemPoolCreate(&pool, &props));
    CK(cuMemPoolCreate(&other, &props));
    props = props_of(dev, CU_MEM_HANDLE_TYPE_NONE);
    CK(cuMemPoolCreate(&plain, &props));
    CK(cuMemAllocFromPoolAsync(&p, SIZE, pool, s));
    CK(cuMemAllocFromPoolAsync(&q, 4096, other, s));
    CK(cuMemAllocFromPoolAsync(&r, 4096, plain, s));
    for (unsigned i = 0; i < WORDS; i++)
        host[i] = i * 3u + 7u;
    CK(cuMemcpyHtoDAsync(p, host, SIZE, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int plain_fd = -1;
    CUresult plain_export = cuMemPoolExportToShareableHandle(
        &plain_fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    CUmemPoolPtrExportData junk;
    CUresult plain_ptr = cuMemPoolExportPointer(&junk, r);
    CUresult self = cuMemPoolImportFromShareableHandle(
        &self_import, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    CK(cuMemPoolExportPointer(&x.mine, p));
    CK(cuMemPoolExportPointer(&x.other, q));
    if (send_fd(sock, fd, &x, sizeof x) || read(sock, &byte, 1) != 1 ||
        waitpid(pid, &status, 0) != pid)
        return 1;
    close(fd);
    CK(cuMemcpyDtoH(host, p + SIZE / 2, SIZE / 2));
    unsigned wrong = 0;
    for (unsigned i = 0; i < WORDS / 2; i++)
        wrong += host[i] != ~(i * 3u + 7u);
    CK(cuMemFreeAsync(p, s));
    CK(cuMemFreeAsync(q, s));
    CK(cuMemFreeAsync(r, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemPoolDestroy(pool));
    CK(cuMemPoolDestroy(other));
    CK(cuMemPoolDestroy(plain));
    CK(cuStreamDestroy(s));
    CK(cuCtxDestroy(ctx));
    printf("parent handle_types=%d plain_export=%s plain_pointer=%s self_import=%s "
           "answer_wrong=%u child_exit=%d\n", types, name_of(plain_export), name_of(plain_ptr),
           name_of(self), wrong, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(host);
    return 0;
}

int main(int argc, char **argv)
{
    int sv[2];
    if (argc < 2 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 2;
    fflush(stdout);
    pid_t pid = fork();                          /* before any CUDA call, as the sample */
    if (pid < 0)
        return 2;
    if (pid == 0) {
        close(sv[0]);
        int rc = child(sv[1], atoi(argv[1]));
        fflush(stdout);
        _exit(rc);
    }
    close(sv[1]);
    return parent(sv[0], pid);
}
