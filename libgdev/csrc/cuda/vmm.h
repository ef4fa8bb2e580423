/* libcuda's process-wide records of CUDA's virtual memory management (vmmtab.c), used by
 * the entry points of vmm.c.
 *
 * In CUDA an allocation handle and a reserved range belong to the process, not to a
 * context: a program may create and export an allocation with no context current, or unmap
 * a range after destroying the context that mapped it (the samples memMapIPCDrv and
 * vectorAddMMAP do both).  Here each context is its own Gdev handle and address space, so:
 *  - an allocation lives in the current context's handle when that context is on the
 *    requested device, else in a per-device "holder" handle the library opens on first
 *    need and keeps until the process ends;
 *  - a range lives in the handle current when it was reserved (the holder of device 0 if
 *    none), and a kernel sees it only in that context;
 *  - a call on a range or allocation goes to the handle that holds it; mapping an
 *    allocation of one handle into another's range exports it from the first and imports
 *    it into the second (the daemon's capability rule, within one process);
 *  - once a context is destroyed its records are dead: the daemon gave back everything it
 *    held, so unmapping or freeing a range of it succeeds with nothing to do.
 * Every record is found by searching its list, so a bad handle value from the program is
 * refused, never dereferenced.  One mutex guards both lists. */
#ifndef GDEV_CUDA_VMM_H
#define GDEV_CUDA_VMM_H

#include "cuda_internal.h"

struct vmm_alloc {
    Ghandle h;       /* the Gdev handle holding the daemon's id */
    CUcontext ctx;   /* the context of h, NULL for a holder */
    uint64_t id;     /* the daemon's allocation id in h */
    CUdevice dev;
    int refs;        /* one per daemon reference: create, retain, import minus releases */
    struct vmm_alloc *next;
};

struct vmm_range {
    uint64_t va, size;
    Ghandle h;
    CUcontext ctx;   /* NULL for a holder */
    CUdevice dev;
    struct vmm_range *next;
};

void vmm_lock(void);
void vmm_unlock(void);
/* The Gdev handle for new objects on device dev: the current context's if it is on dev,
 * else dev's holder (opened on first use); NULL with the reason recorded. */
CUresult vmm_owner(CUdevice dev, Ghandle *h, CUcontext *ctx);
/* The live record of handle value v (lock held), else NULL. */
struct vmm_alloc *vmm_alloc_of(CUmemGenericAllocationHandle v);
struct vmm_alloc *vmm_alloc_find(Ghandle h, uint64_t id); /* by daemon id (lock held) */
struct vmm_alloc *vmm_alloc_new(Ghandle h, CUcontext ctx, uint64_t id, CUdevice dev);
void vmm_alloc_drop(struct vmm_alloc *a); /* unlink and free (lock held) */
/* The range containing ptr (lock held), else NULL. */
struct vmm_range *vmm_range_of(uint64_t ptr);
CUresult vmm_range_new(uint64_t va, uint64_t size, Ghandle h, CUcontext ctx, CUdevice dev);
void vmm_range_drop(struct vmm_range *r);
int vmm_dead(CUcontext ctx); /* the record's context was destroyed */

#endif
