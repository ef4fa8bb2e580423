/* Internals of libcudart.so.13: the CUDA runtime API over libcuda.so.1 (docs/clib.md).
 * Compiled against NVIDIA's cuda_runtime_api.h for CUDA's exact prototypes.  cudaStream_t
 * and cudaEvent_t are the driver's CUstream and CUevent. */
#ifndef CUDART_INTERNAL_H
#define CUDART_INTERNAL_H

#define CUDA_ENABLE_DEPRECATED 1
#ifdef RT_CUDA12_ABI
/* libcudart.so.12: the calls whose arguments changed in CUDA 13 keep CUDA 13's form under
 * CUDA 12's suffixed names; the plain names take CUDA 12's arguments (abi12.c). */
#define cudaGraphAddDependencies cudaGraphAddDependencies_v2
#define cudaGraphRemoveDependencies cudaGraphRemoveDependencies_v2
#define cudaGraphGetEdges cudaGraphGetEdges_v2
#define cudaGraphNodeGetDependencies cudaGraphNodeGetDependencies_v2
#define cudaGraphNodeGetDependentNodes cudaGraphNodeGetDependentNodes_v2
#define cudaStreamGetCaptureInfo cudaStreamGetCaptureInfo_v3
#define cudaStreamUpdateCaptureDependencies cudaStreamUpdateCaptureDependencies_v2
#define cudaGraphAddNode cudaGraphAddNode_v2
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#define API __attribute__((visibility("default")))

/* RT_PTDS(f)/RT_PTSZ(f): export runtime entry point f (defined above in the same file) also
 * under the name nvcc --default-stream per-thread binds it by (cudaMemcpy_ptds,
 * cudaMemcpyAsync_ptsz ...).  The per-thread default stream is the context's legacy stream
 * here (the driver's launch.c), an order at least as strict, so the function is the same. */
#define RT_PER_THREAD_(f, sfx) \
    extern __typeof__(f) f##sfx __attribute__((alias(#f), visibility("default")));
#define RT_PER_THREAD(f, sfx) RT_PER_THREAD_(f, sfx)
#define RT_PTDS(f) RT_PER_THREAD(f, _ptds)
#define RT_PTSZ(f) RT_PER_THREAD(f, _ptsz)
/* IN_CTX(): return the failure to reach the current device's primary context (rt_ctx);
 * CALL(x): return driver result x as the runtime's, recorded as the thread's last error. */
#define IN_CTX() do { CUcontext c_; cudaError_t e_ = rt_ctx(&c_); if (e_) return e_; } while (0)
#define CALL(x) return rt_set(rt_from(x))
#define MAX_DEVICES 64

/* A kernel registered by nvcc's host code: the host stub's address names it. */
struct rt_func {
    const void *host_fun;
    char *name;
    struct rt_fatbin *fatbin;
    CUfunction fn[MAX_DEVICES]; /* resolved per device, on first launch ... */
    CUmodule fnmod[MAX_DEVICES]; /* ... in this module (another after a context change) */
};

/* A __device__/__constant__ variable registered by nvcc's host code. */
struct rt_var {
    const void *host_var;
    char *name;
    size_t size;
    struct rt_fatbin *fatbin;
};

/* One fatbinary of the program: its module is loaded into a device's context on first use. */
struct rt_fatbin {
    const void *wrapper;
    CUmodule mod[MAX_DEVICES];
    unsigned long long modctx[MAX_DEVICES]; /* the id (cuCtxGetId: never reused) of the context
                                             * mod[dev] is loaded in: the primary one, or one the
                                             * program made current through the driver */
};

cudaError_t rt_ctx(CUcontext *ctx); /* the thread's driver context, else the primary one */
cudaError_t rt_module(struct rt_fatbin *fb, CUmodule *mod); /* loaded on first use */
cudaError_t rt_managed_push(void); /* __managed__ variables (managed.c): before a launch */
void rt_managed_pull(void);        /* ... at a synchronization */
void rt_managed_forget(void);      /* ... after cudaDeviceReset */
/* stream capture (capture.c): whether s is capturing; recording instead of issuing */
int rt_capturing(cudaStream_t s);
cudaError_t rt_capture_kernel(cudaStream_t s, const void *func, dim3 grid, dim3 block,
                              void **args, size_t shared);
cudaError_t rt_capture_copy(cudaStream_t s, void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind);
cudaError_t rt_capture_memset(cudaStream_t s, void *p, int value, size_t n);
cudaError_t rt_capture_copy3d(cudaStream_t s, const struct cudaMemcpy3DParms *p);
cudaError_t rt_capture_memset2d(cudaStream_t s, void *p, size_t pitch, int value,
                                size_t width, size_t height);
cudaError_t rt_capture_host(cudaStream_t s, cudaHostFn_t fn, void *data);
cudaError_t rt_capture_graph(cudaStream_t s, const struct CUgraph_st *g);
cudaError_t rt_capture_alloc(cudaStream_t s, size_t size, void **p);
cudaError_t rt_capture_free(cudaStream_t s, void *p);
cudaError_t rt_capture_event(cudaStream_t s, cudaEvent_t e, unsigned flags);
void rt_capture_forget_event(cudaEvent_t e); /* recorded outside a capture (or destroyed) */
/* cudaStreamWaitEvent: *handled = 1 when a capture took the wait */
cudaError_t rt_capture_wait(cudaStream_t s, cudaEvent_t e, int *handled);
cudaError_t rt_capture_sync(cudaStream_t s); /* a capturing stream cannot synchronize */
/* graph_mem.c: whether p lies in a graph allocation (freed only with its graphs) */
int rt_gmem_owned(const void *p);
int rt_device(void);
cudaError_t rt_valid_device(int dev); /* peer.c: cudaErrorInvalidDevice unless 0 <= dev < n */
cudaError_t rt_set(cudaError_t err);                 /* record as the thread's last error */
cudaError_t rt_from(CUresult r);                     /* driver result -> runtime error */
cudaError_t rt_function(const void *host_fun, CUfunction *fn);
/* the host stub naming a kernel, given the stub or CUDA 13's kernel handle (register.c) */
const void *rt_host_stub(const void *func);
cudaError_t rt_symbol(const void *symbol, CUdeviceptr *addr, size_t *size);
void rt_forget_device(int dev);                      /* after cudaDeviceReset */
/* array3d.c: a cudaMemcpy3DParms copy (arrays or linear memory) as libcuda's cuMemcpy3D */
cudaError_t rt_copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, int async);
CUresult rt_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                 cudaStream_t s, int async);         /* one copy of any kind */

/* Channel descriptors <-> the driver's format and channel count (texture.c): 0 if textures
 * and arrays cannot have the descriptor (unequal widths, three channels, other kinds). */
/* array3d.c: the driver's descriptor of an array of `desc` texels, `extent` and `flags`,
 * checked as cudaMalloc3DArray and cudaMallocMipmappedArray check them */
cudaError_t rt_array3d_desc(const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                            unsigned int flags, CUDA_ARRAY3D_DESCRIPTOR *d);
int rt_channel_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt,
                      unsigned *ch);
struct cudaChannelFormatDesc rt_channel_desc(CUarray_format fmt, unsigned ch);

#endif /* CUDART_INTERNAL_H */
