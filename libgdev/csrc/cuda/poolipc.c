/* Memory pools shared between processes (cuMemPoolExportToShareableHandle,
 * cuMemPoolImportFromShareableHandle, cuMemPoolExportPointer, cuMemPoolImportPointer), as
 * NVIDIA's streamOrderedAllocationIPC uses them.
 *
 * A pool created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR has a random 16-byte
 * identity (pool.c).  Its shareable handle is a sealed memfd holding that identity, the
 * exporting process and the pool's device; importing it makes a local pool that makes no
 * allocations.  A pointer's export data is the daemon's IPC handle of the allocation
 * (ipc.c: the daemon alone decides what a handle opens, by its 128-bit secret) followed by
 * the pool's identity, so a pointer imports only through the pool it came from, as CUDA
 * checks.  An imported pointer is an opened IPC handle: cuMemFree and cuMemFreeAsync close
 * it, and the exporter's memory stays until every importer has.  Nothing here is trusted
 * for access: a forged handle or export data opens nothing the daemon does not grant. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pool.h"

#define IPC_PART 40 /* the IPC handle's bytes in the export data (the rest of it is zero) */

static const char pool_magic[8] = "GDEVPOOL";

/* What the shareable handle's file holds. */
struct shared_pool {
    char magic[8];
    uint32_t pid;    /* the exporting process */
    int32_t device;  /* the pool's device */
    unsigned char token[16];
};

/* A pointer this process imported (one record per cuMemPoolImportPointer). */
struct imported {
    CUcontext ctx;
    CUdeviceptr p;
    CUmemoryPool pool; /* NULL once the pool is destroyed */
    struct imported *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct imported *imports;

static CUresult shareable(CUmemoryPool pool, CUmemAllocationHandleType type, const char *who)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: POSIX file descriptors are the only "
                       "handle type of pools here", who);
    if (!(pool->handle_types & type) || pool->imported)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: the pool was not created with "
                       "handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", who);
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                              CUmemAllocationHandleType type,
                                              unsigned long long flags)
{
    CUresult r = shareable(pool, type, "cuMemPoolExportToShareableHandle");
    if (r || !handle_out || flags)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    struct shared_pool rec = {.pid = (uint32_t)getpid(), .device = pool->device};
    memcpy(rec.magic, pool_magic, sizeof rec.magic);
    memcpy(rec.token, pool->token, sizeof rec.token);
    int fd = memfd_create("gdev-mempool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemPoolExportToShareableHandle: "
                       "memfd_create: %s", strerror(errno));
    if (pwrite(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        close(fd);
        return cu_fail(CUDA_ERROR_OPERATING_SYSTEM, "cuMemPoolExportToShareableHandle: %s",
                       strerror(errno));
    }
    *(int *)handle_out = fd;
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                CUmemAllocationHandleType type,
                                                unsigned long long flags)
{
    static const char *who = "cuMemPoolImportFromShareableHandle";
    struct shared_pool rec;
    if (!pool_out || flags || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: a POSIX file descriptor, flags 0", who);
    int fd = (int)(intptr_t)handle;
    if (pread(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec ||
        memcmp(rec.magic, pool_magic, sizeof rec.magic))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: descriptor %d is no pool's shareable "
                       "handle (cuMemPoolExportToShareableHandle)", who, fd);
    if (rec.pid == (uint32_t)getpid())
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: a pool is imported by another process "
                       "than the one that exported it", who);
    CUresult r = cu_valid_device(rec.device);
    if (r)
        return cu_fail(r, "%s: the pool's device %d is not one of this process's", who,
                       rec.device);
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct CUmemPoolHandle_st){.device = rec.device, .reuse = {1, 1, 1}, .imported = 1,
                                     .handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    memcpy(p->token, rec.token, sizeof p->token);
    *pool_out = p;
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
    LIVE(c);
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemoryPool pool = cu_pool_of(c, ptr);
    if (!pool || pool->imported)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemPoolExportPointer: 0x%llx is no "
                       "allocation of a pool of this context", (unsigned long long)ptr);
    CUresult r = shareable(pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                           "cuMemPoolExportPointer");
    if (r)
        return r;
    CUipcMemHandle h;
    if ((r = cuIpcGetMemHandle(&h, ptr)))
        return r;
    memset(out, 0, sizeof *out);
    memcpy(out->reserved, h.reserved, IPC_PART);
    memcpy((char *)out->reserved + IPC_PART, pool->token, sizeof pool->token);
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                    CUmemPoolPtrExportData *data)
{
    static const char *who = "cuMemPoolImportPointer";
    LIVE(c);
    if (!ptr_out || !pool || !data)
        return CUDA_ERROR_INVALID_VALUE;
    if (!pool->imported)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: the pool is not imported "
                       "(cuMemPoolImportFromShareableHandle)", who);
    const char *bytes = (const char *)data->reserved;
    if (memcmp(bytes + IPC_PART, pool->token, sizeof pool->token))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: the data exports a pointer of another "
                       "pool", who);
    struct imported *rec = malloc(sizeof *rec);
    if (!rec)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    memcpy(h.reserved, bytes, IPC_PART);
    CUresult r = cu_ipc_open(c, &h, ptr_out, who);
    if (r) {
        free(rec);
        return r;
    }
    pthread_mutex_lock(&lock);
    *rec = (struct imported){c, *ptr_out, pool, imports};
    imports = rec;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

int cu_pool_import_free(CUcontext c, CUdeviceptr p, CUresult *r)
{
    struct imported *gone = NULL;
    pthread_mutex_lock(&lock);
    for (struct imported **q = &imports; *q; q = &(*q)->next)
        if ((*q)->ctx == c && (*q)->p == p) {
            gone = *q;
            *q = gone->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (!gone)
        return 0;
    free(gone);
    *r = cu_ipc_close(c, p, "cuMemFree");
    return 1;
}

CUmemoryPool cu_pool_import_of(CUcontext c, CUdeviceptr p)
{
    CUmemoryPool pool = NULL;
    pthread_mutex_lock(&lock);
    for (struct imported *q = imports; q && !pool; q = q->next)
        pool = q->ctx == c && q->p == p ? q->pool : NULL;
    pthread_mutex_unlock(&lock);
    return pool;
}

void cu_pool_imports_forget(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    for (struct imported *q = imports; q; q = q->next)
        q->pool = q->pool == pool ? NULL : q->pool;
    pthread_mutex_unlock(&lock);
}

/* Forget the pointers a destroyed context imported (its handle took the mappings with it). */
void cu_pool_imports_drop(CUcontext c)
{
    pthread_mutex_lock(&lock);
    for (struct imported **q = &imports; *q;) {
        struct imported *gone = *q;
        if (gone->ctx == c) {
            *q = gone->next;
            free(gone);
        } else {
            q = &gone->next;
        }
    }
    pthread_mutex_unlock(&lock);
}
