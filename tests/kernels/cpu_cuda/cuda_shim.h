/* A CPU stand-in for the CUDA device environment, used as an independent oracle for the
 * repository's kernels (tests/kernels/cpu_backend.py compiles each kernels/*.cu against it).
 *
 * Every CUDA thread of a block is a ucontext fiber; the scheduler runs the fibers of a block
 * one at a time until each finishes or stops at a barrier: __syncthreads() releases when every
 * thread of the block that has not exited is waiting at it, a warp barrier (used by the
 * shuffles) when every live lane of the warp is.  Blocks run one after another.  Fibers are
 * never preempted, so atomics are plain read-modify-writes.  Shared variables are statics,
 * dynamic shared memory one buffer per launch.  Not a PTX interpreter: it runs the CUDA C.
 */
#ifndef CUDA_SHIM_H
#define CUDA_SHIM_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ucontext.h>

struct dim3_ { unsigned int x, y, z; };
typedef dim3_ uint3;

struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; };
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
    uint4 r = {x, y, z, w};
    return r;
}

enum { SHIM_RUN, SHIM_BLOCK_BAR, SHIM_WARP_BAR, SHIM_DONE };

struct shim_thread {
    ucontext_t uc;
    dim3_ tid;
    int state;
    char *stack;
};

#define SHIM_MAX_THREADS 1024
#define SHIM_STACK (64 * 1024)

static shim_thread shim_threads[SHIM_MAX_THREADS];
static shim_thread *shim_cur;
static ucontext_t shim_sched;
static dim3_ shim_block_idx, shim_block_dim, shim_grid_dim;
static unsigned char *shim_dyn_smem;
static void (*shim_entry)(const char *);
static const char *shim_params;
static unsigned long long shim_warp_slot[SHIM_MAX_THREADS];

#define threadIdx (shim_cur->tid)
#define blockIdx shim_block_idx
#define blockDim shim_block_dim
#define gridDim shim_grid_dim

#define __global__
#define __device__
#define __host__
#define __constant__
#define __shared__ static
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict

static inline unsigned int shim_linear_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

static inline void shim_wait(int state)
{
    shim_cur->state = state;
    swapcontext(&shim_cur->uc, &shim_sched);
}

static inline void __syncthreads(void) { shim_wait(SHIM_BLOCK_BAR); }
static inline void __syncwarp(unsigned int mask = 0xffffffffu) { (void)mask; shim_wait(SHIM_WARP_BAR); }

template <typename T> static inline T shim_shfl(T v, unsigned int src_lane)
{
    unsigned int me = shim_linear_tid();
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    shim_warp_slot[me] = bits;
    shim_wait(SHIM_WARP_BAR);
    unsigned int src = (me & ~31u) | (src_lane & 31u);
    bits = shim_warp_slot[src];
    shim_wait(SHIM_WARP_BAR);
    T out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

template <typename T> static inline T __shfl_down_sync(unsigned int m, T v, unsigned int d)
{
    (void)m;
    unsigned int lane = shim_linear_tid() & 31u;
    return shim_shfl(v, lane + d < 32 ? lane + d : lane);
}

template <typename T> static inline T __shfl_sync(unsigned int m, T v, int src)
{
    (void)m;
    return shim_shfl(v, (unsigned int)src);
}

template <typename T> static inline T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> static inline T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <typename T> static inline T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }

static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }

static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int n)
{
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (n & 31));
}
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s)
{
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int k = 0; k < 4; k++)
        r |= (unsigned int)((v >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
    return r;
}
#define __log2f(x) log2f(x)
#define __powf(x, y) powf(x, y)

static void shim_trampoline(void)
{
    shim_entry(shim_params);
    shim_cur->state = SHIM_DONE;
}

/* Release the waiters of one barrier kind if all live threads in [lo, hi) wait at it. */
static int shim_release(unsigned int lo, unsigned int hi, int kind)
{
    int waiting = 0;
    for (unsigned int t = lo; t < hi; t++) {
        if (shim_threads[t].state == SHIM_DONE)
            continue;
        if (shim_threads[t].state != kind)
            return 0;
        waiting = 1;
    }
    for (unsigned int t = lo; t < hi; t++)
        if (shim_threads[t].state == kind)
            shim_threads[t].state = SHIM_RUN;
    return waiting;
}

static int shim_run_block(unsigned int n)
{
    for (unsigned int t = 0; t < n; t++) {
        shim_thread *th = &shim_threads[t];
        if (!th->stack && !(th->stack = (char *)malloc(SHIM_STACK)))
            return -1;
        getcontext(&th->uc);
        th->uc.uc_stack.ss_sp = th->stack;
        th->uc.uc_stack.ss_size = SHIM_STACK;
        th->uc.uc_link = &shim_sched;
        makecontext(&th->uc, shim_trampoline, 0);
        th->tid.x = t % blockDim.x;
        th->tid.y = (t / blockDim.x) % blockDim.y;
        th->tid.z = t / (blockDim.x * blockDim.y);
        th->state = SHIM_RUN;
    }
    for (;;) {
        int ran = 0;
        for (unsigned int t = 0; t < n; t++) {
            if (shim_threads[t].state != SHIM_RUN)
                continue;
            shim_cur = &shim_threads[t];
            swapcontext(&shim_sched, &shim_cur->uc);
            ran = 1;
        }
        int released = 0;
        for (unsigned int w = 0; w < n; w += 32)
            released |= shim_release(w, w + 32 < n ? w + 32 : n, SHIM_WARP_BAR);
        if (!released)
            released = shim_release(0, n, SHIM_BLOCK_BAR);
        if (!released && !ran)
            break;
    }
    for (unsigned int t = 0; t < n; t++)
        if (shim_threads[t].state != SHIM_DONE)
            return -2; /* deadlock: threads wait at barriers that can never release */
    return 0;
}

/* Run entry(params) over the grid; 0 on success, -1 out of memory, -2 deadlock, -3 bad shape. */
extern "C" int shim_launch(void (*entry)(const char *), const char *params, unsigned int gx,
                           unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int dyn_smem)
{
    unsigned int n = bx * by * bz;
    if (n == 0 || n > SHIM_MAX_THREADS)
        return -3;
    static unsigned char *smem;
    free(smem);
    smem = (unsigned char *)calloc(1, dyn_smem ? dyn_smem : 16);
    shim_dyn_smem = smem;
    shim_entry = entry;
    shim_params = params;
    shim_block_dim = {bx, by, bz};
    shim_grid_dim = {gx, gy, gz};
    for (unsigned int z = 0; z < gz; z++)
        for (unsigned int y = 0; y < gy; y++)
            for (unsigned int x = 0; x < gx; x++) {
                shim_block_idx = {x, y, z};
                int rc = shim_run_block(n);
                if (rc)
                    return rc;
            }
    return 0;
}

#endif
