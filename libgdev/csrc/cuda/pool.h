/* Memory pools, shared by pool.c (pools, their allocations and accounting) and poolipc.c
 * (pools shared between processes). */
#ifndef GDEV_CUDA_POOL_H
#define GDEV_CUDA_POOL_H

#include "cuda_internal.h"

struct CUmemPoolHandle_st {
    int device;
    int is_default;
    int reuse[3]; /* CU_MEMPOOL_ATTR_REUSE_{FOLLOW_EVENT_DEPENDENCIES,ALLOW_OPPORTUNISTIC,
                     ALLOW_INTERNAL_DEPENDENCIES} */
    uint64_t threshold, used, used_high, reserved_high, max_size;
    unsigned handle_types;     /* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: shareable */
    int imported;              /* cuMemPoolImportFromShareableHandle: makes no allocations */
    unsigned char token[16];   /* a shareable pool's identity, random, in its exports */
};

/* poolipc.c: the pointers imported from a pool are closed before the pool is freed */
void cu_pool_imports_forget(CUmemoryPool pool);

#endif
