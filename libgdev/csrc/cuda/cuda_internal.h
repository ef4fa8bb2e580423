/* Internals of libcuda.so.1: the driver API over libgdev's verbs (docs/clib.md).
 * Compiled against NVIDIA's cuda.h, so every entry point has CUDA's exact prototype and its
 * versioned symbol name (cuMemAlloc is cuMemAlloc_v2, cuCtxCreate is cuCtxCreate_v4 ...). */
#ifndef CUDA_INTERNAL_H
#define CUDA_INTERNAL_H

#define CUDA_ENABLE_DEPRECATED 1 /* the deprecated entry points are implemented too */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "gdev.h"

#define API __attribute__((visibility("default")))
#define GDEV_CUDA_VERSION 13000 /* cuDriverGetVersion: the cuda.h these entry points follow */

struct CUmod_st;
struct CUevent_st;

/* A device allocation, for cuMemGetAddressRange and pointer checks. */
struct alloc {
    uint64_t addr, size;
    int managed; /* a gmalloc_unified buffer (cuMemAllocManaged): freed by gfree_dma */
    unsigned long long id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused */
    int sync_memops;       /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS as set */
};

/* A context: one Gdev handle (its own address space), as in Gdev's libucuda. */
struct CUctx_st {
    Ghandle h;
    CUdevice dev;
    unsigned flags;
    int destroyed;
    CUresult sticky; /* a kernel's illegal address poisons the context, as in CUDA */
    pthread_mutex_t lock;
    struct alloc *allocs;
    size_t nallocs, cap;
    struct CUmod_st *marker; /* the event marker module, loaded on first timed record */
    uint64_t slots; /* a page of 8-byte event time slots */
    uint32_t slots_used;
    uint32_t last_fence; /* newest asynchronous op of the NULL stream */
    struct CUctx_st *next_destroyed;
    struct CUmod_st *modules; /* loaded modules, freed with the context as in CUDA */
    int printf_pending; /* a kernel that prints was launched since the last cu_printf_flush */
    struct CUmod_st *memops; /* cuStreamWaitValue/WriteValue's kernels, loaded on first use */
    unsigned long long id;   /* cuCtxGetId: unique in the process, never reused */
    size_t limits[CU_LIMIT_MAX]; /* cuCtxSetLimit: recorded, reported (ctxinfo.c) */
    unsigned attached; /* cuCtxAttach's usage count beyond its creator's (legacy.c) */
    int primary;       /* a device's primary context: its struct is never freed (context.c) */
    struct cls_entry *cls; /* context-local storage of NVIDIA's static runtime (cls.c) */
    size_t ncls;
};

/* One kernel of a module: its entry in the daemon's function table (index, parameter
 * layout, attributes) and the legacy launch state. */
struct CUfunc_st {
    struct CUmod_st *mod;
    uint32_t index;
    const struct gdev_function *info;
    /* legacy launch state (cuParamSet*, cuFuncSetBlockShape, cuFuncSetSharedSize) */
    uint8_t legacy_params[4096];
    uint32_t legacy_size;
    int bx, by, bz;
    unsigned shared;
    /* cuFuncSetAttribute's values, said back by cuFuncGetAttribute once set */
    int dyn_max, carveout;
    unsigned char has_dyn_max, has_carveout;
};

struct CUmod_st {
    CUcontext ctx;
    struct gdev_module *gm; /* the daemon's table; NULL once unloaded */
    struct CUfunc_st *funcs;
    int data_mapped; /* its data segment is mapped here, a managed allocation (library.c) */
    struct CUmod_st *next;
};

struct CUstream_st {
    CUcontext ctx;
    uint32_t sid; /* its stream of the context's Gdev handle */
    uint32_t last_fence;
    unsigned flags;          /* as created (CU_STREAM_NON_BLOCKING) */
    int priority;            /* as created, clamped to cuCtxGetStreamPriorityRange */
    unsigned long long id;   /* cuStreamGetId: unique in the process, never reused */
};

/* A CUDA array: packed rows of texels in one allocation of its context (array.c). */
struct CUarray_st {
    CUcontext ctx;
    CUDA_ARRAY_DESCRIPTOR desc;
    CUdeviceptr ptr;
    size_t pitch, rows; /* bytes per row; max(Height, 1) */
    size_t depth;       /* cuArray3DCreate's Depth (0: a 1D or 2D array) */
    size_t slices, slice_pitch; /* max(Depth, 1) slices of rows, slice_pitch bytes apart */
    unsigned flags;     /* cuArray3DCreate's CUDA_ARRAY3D_* flags */
    int destroyed;
    struct CUmipmappedArray_st *owner; /* the mipmapped array this is a level of, or NULL */
};

struct CUevent_st {
    CUcontext ctx;
    unsigned flags;
    int recorded;
    uint32_t fence;
    uint64_t slot; /* device address of its timestamp, 0 for CU_EVENT_DISABLE_TIMING */
    struct cu_ipc_event *ipc; /* an interprocess event's daemon record (ipc.c), else NULL */
};

/* PTDS(f)/PTSZ(f): export entry point f (defined above in the same file) also under the name
 * cuda.h gives it with CUDA_API_PER_THREAD_DEFAULT_STREAM (cuMemcpyHtoD_v2_ptds ...).  The
 * per-thread default stream is the context's legacy stream here (launch.c), an order at
 * least as strict, so the function is the same. */
#define PER_THREAD_(f, sfx) \
    extern __typeof__(f) f##sfx __attribute__((alias(#f), visibility("default")));
#define PER_THREAD(f, sfx) PER_THREAD_(f, sfx)
#define PTDS(f) PER_THREAD(f, _ptds)
#define PTSZ(f) PER_THREAD(f, _ptsz)

/* Helpers shared by the files of libcuda. */
CUresult cu_error(int neg_errno);            /* Gdev's -errno -> CUresult (docs/cuda.md) */
/* Write the JIT output options a program reads back (link.c): wall time, info and error log. */
void cu_jit_report(unsigned n, CUjit_option *opt, void **val, double ms, const char *info,
                   const char *error);
double cu_ms_since(const struct timespec *t0); /* milliseconds since t0 (monotonic) */
const char *gdevCudaLastError(void);
/* The whole file at path, NUL-terminated, in a malloc'ed *out (FILE_NOT_FOUND naming who). */
CUresult cu_read_file(const char *who, const char *path, char **out);
int cu_kernel_fault(CUresult r); /* a kernel's own fault: poisons its context (errors.c) */
CUresult cu_poison(CUcontext c, CUresult r); /* r, made sticky if cu_kernel_fault(r) */
CUresult cu_fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Say fmt once on stderr ("gdev: ..."), the first time *said is 0, unless GDEV_QUIET is set
 * (not "0"): for failures an unmodified program would report without the reason. */
void cu_notice(int *said, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
CUresult cu_current(CUcontext *ctx);         /* the calling thread's live current context */
/* Declare CUcontext c, the current context, returning cu_current's failure from the caller. */
#define CURRENT(c)                                                                         \
    CUcontext c = NULL;                                                                    \
    do {                                                                                   \
        CUresult r_ = cu_current(&c);                                                      \
        if (r_)                                                                            \
            return r_;                                                                     \
    } while (0)
/* cu_current, then the context's sticky error once a kernel of it faulted (cu_poison): the
 * calls that create or enqueue fail with it, as every call of a faulted CUDA context does;
 * queries, destroys and frees of client-side records do not. */
CUresult cu_live(CUcontext *ctx);
/* CURRENT, returning cu_live's failure. */
#define LIVE(c)                                                                            \
    CUcontext c = NULL;                                                                    \
    do {                                                                                   \
        CUresult r_ = cu_live(&c);                                                         \
        if (r_)                                                                            \
            return r_;                                                                     \
    } while (0)
CUresult cu_load_ptx(CUcontext ctx, const char *text, size_t len, CUmodule *out);
void cu_unload_all(CUcontext ctx);
void gdev_module_free(struct gdev_module *m); /* libgdev's internals, linked in */
int gdev_last_errno(void);
CUresult cu_image_to_ptx(const void *image, const char **ptx, size_t *len, char **owned);
/* A device-linked program (nvcc -rdc: a fatbinary wrapper of version 2, which lists every
 * translation unit's fatbinary): one linked-module image (owned) of the units' PTX, which the
 * daemon links as nvlink would; a unit with machine code only for this device is left out
 * (the CUDA device runtime nvcc links into every such program: the daemon provides the
 * calls of dynamic parallelism itself, gdevd/gpu/ptx/devrt.py).  link.c */
CUresult cu_prelinked_image(const void *const *units, char **image, size_t *size);
/* Linked-module images (linkimage.c, libgdev/linkimage.py): several PTX texts in one image. */
#define CU_LINK_MAX_INPUTS 256
#define CU_LINK_NAME_MAX 1024
int cu_is_linked_image(const void *image);
size_t cu_linked_image_size(const void *image);
CUresult cu_linked_image(size_t n, char *const *names, char *const *texts, char **out,
                         size_t *size);
/* 1 if a fatbinary has machine code for compute capability cc (or older) and PTX only for
 * newer ones: CUDA would run the machine code there, which the emulated GPU cannot */
int cu_fatbin_sass_only_for(const void *image, int cc);
void cu_track_alloc(CUcontext ctx, uint64_t addr, uint64_t size, int managed);
/* 0 if addr starts no allocation, 1 for device memory, 2 for managed memory (untracked) */
int cu_untrack_alloc(CUcontext ctx, uint64_t addr);
/* 1 if [addr, addr + size) lies in one managed allocation of ctx */
int cu_is_managed(CUcontext ctx, uint64_t addr, uint64_t size);
uint32_t *cu_stream_fence(CUcontext ctx, CUstream s);
uint32_t cu_stream_id(CUstream s); /* the handle's stream: 0 (legacy) for NULL/LEGACY/PER_THREAD */
int cu_stream_is_legacy(CUstream s); /* NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD */
/* The context whose handle runs stream s: the current one for the legacy stream, else the
 * stream's own (CUDA runs a stream's copies, events and waits on the stream's device whatever
 * is current); CONTEXT_IS_DESTROYED if it is gone. */
CUresult cu_stream_owner(CUstream s, CUcontext *ctx);
/* CURRENT for stream s: c is cu_stream_owner's context, or the function returns its failure. */
#define STREAM_CTX(c, s)                                                                   \
    CUcontext c = NULL;                                                                    \
    do {                                                                                   \
        CUresult r_ = cu_stream_owner((s), &c);                                            \
        if (r_)                                                                            \
            return r_;                                                                     \
    } while (0)
size_t cu_element_size(CUarray_format f); /* bytes of one channel; 0 if not a format */
void cu_tex_forget(CUcontext ctx); /* drop the records of ctx's texture objects */
int cu_initialized(void);
/* Device dev's primary context, active or not, without a reference (context.c). */
CUresult cu_primary_handle(CUcontext *pctx, CUdevice dev);
/* Runs and drops the context-local storage of ctx, before it is destroyed (cls.c). */
void cu_cls_release(CUcontext ctx);
CUresult cu_cls_put(CUcontext ctx, void *key, void *value,
                    void (*dtor)(CUcontext, void *, void *));
CUresult cu_cls_delete(CUcontext ctx, void *key);
CUresult cu_cls_get(void **value, CUcontext ctx, void *key);
/* The driver's answer to the static runtime's integrity check (integrity.c). */
void cu_integrity_hash(uint32_t version, uint64_t seconds, const void *cudart_table,
                       const void *check_table, const void *check_fn, uint64_t out[2]);
void cu_printf_flush(CUcontext ctx); /* device printf output onto stdout (context.c) */
int cu_device_count(void);
CUresult cu_valid_device(CUdevice dev); /* NOT_INITIALIZED, INVALID_DEVICE or SUCCESS */

/* drvapi: copies, pointers, streams (copy2d.c, memset.c, pointer.c, streamops.c, library.c) */
struct CUarray_st *cu_array(CUarray a); /* the live array of the current context, or NULL */
CUcontext cu_array_context(CUarray a); /* a live array's context (any), or NULL */
unsigned cu_array_shape(const struct CUarray_st *a); /* GDEV_ABI_TEX_SHAPE_* of its slices */
void cu_array_forget(CUcontext c);      /* free c's array records (cuCtxDestroy) */
int cu_array_within_limits(const CUDA_ARRAY3D_DESCRIPTOR *d); /* CUDA's array extents */
/* mipmap.c: mipmapped arrays (records freed with their context); a texture over one */
void cu_mipmap_forget(CUcontext c);
CUarray cu_mipmap_level0(CUcontext c, CUmipmappedArray m); /* NULL: not a live one of c */
CUresult cu_mipmap_fields(CUarray level0, const CUDA_TEXTURE_DESC *t,
                          struct gdev_abi_tex_desc *d);
CUresult cu_copy2d(const CUDA_MEMCPY2D *p, CUstream s, int async, const char *who);
unsigned long long cu_next_id(void); /* context and stream ids: 1, 2, ... */
void cu_ctx_defaults(CUcontext c);   /* a new context's id and limits (ctxinfo.c) */
void cu_stream_attrs_forget(CUstream s); /* streaminfo.c: at cuStreamDestroy */
CUresult cu_stream_nop(CUstream s); /* streamops.c: an empty kernel in s */
CUresult cu_load_error(CUcontext c); /* module.c: the result and reason of a refused module */
/* library.c: a CUkernel passed as a CUfunction becomes the current context's function */
CUresult cu_function_of(CUfunction *f);
int cu_is_kernel(const void *f);
const struct gdev_function *cu_kernel_info(CUkernel k, CUlibrary *lib); /* NULL: no kernel */
CUresult cu_library_module(CUlibrary l, CUmodule *mod); /* its module in the current context */
uint32_t cu_library_target(CUlibrary l); /* the sm_XX its PTX targets */
CUresult cu_func_attribute(const struct gdev_function *i, uint32_t target_sm, CUdevice dev,
                           CUfunction_attribute attrib, int *pi); /* launch.c */
/* pinned (cuMemHostAlloc) and registered host memory, for pointer queries (hostmem.c) */
void cu_host_track(CUcontext c, void *p, size_t size, unsigned flags);
void cu_host_untrack(const void *p);
void cu_host_forget(CUcontext c); /* c's pinned buffers' records (cuCtxDestroy) */
struct cu_host_info {
    CUcontext ctx;
    void *base;
    size_t size;
    unsigned flags; /* CU_MEMHOSTALLOC_* or CU_MEMHOSTREGISTER_* as given */
    unsigned long long id;
    int registered; /* 1 cuMemHostRegister, 0 cuMemHostAlloc */
};
int cu_host_find(const void *p, size_t n, struct cu_host_info *out); /* 1 if known */
/* ctx's allocation holding p (device or managed memory), copied to *out; 0 if none */
int cu_alloc_find(CUcontext c, uint64_t p, struct alloc *out);
void cu_pool_forget(CUcontext c, CUdeviceptr p); /* pool.c: cuMemFree of a block (0: all of c) */
CUmemoryPool cu_pool_of(CUcontext c, CUdeviceptr base); /* its pool, or NULL */
/* poolipc.c: cuMemFree of a pointer imported from another process's pool (1: it was one,
 * *r its result; 0: not one); the imported pool of such a pointer (NULL: not one) */
int cu_pool_import_free(CUcontext c, CUdeviceptr p, CUresult *r);
CUmemoryPool cu_pool_import_of(CUcontext c, CUdeviceptr p);
void cu_pool_imports_drop(CUcontext c); /* a destroyed context's imported pointers */
/* ipc.c: open a memory handle in c, close it (who: the caller's name for messages) */
CUresult cu_ipc_open(CUcontext c, const CUipcMemHandle *h, CUdeviceptr *pdptr, const char *who);
CUresult cu_ipc_close(CUcontext c, CUdeviceptr dptr, const char *who);
void cu_advice_forget(CUcontext c, CUdeviceptr base); /* managed.c: cuMemFree (0: all of c) */
/* CUDA IPC (ipc.c): interprocess events live in the daemon; stream.c hands them over */
void cu_ipc_forget(CUcontext c); /* the opened memory handles of a destroyed context */
CUresult cu_ipc_event_create(CUevent e); /* e->flags has CU_EVENT_INTERPROCESS */
void cu_ipc_event_destroy(CUevent e);
CUresult cu_ipc_event_record(CUcontext c, CUevent e, CUstream s);
CUresult cu_ipc_event_wait(CUevent e, int poll); /* cuEventSynchronize, cuEventQuery */
CUresult cu_ipc_stream_wait(CUcontext c, CUstream s, CUevent e);

#endif /* CUDA_INTERNAL_H */
