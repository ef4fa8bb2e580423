/* Work a stream runs besides kernels and copies: host functions (cuLaunchHostFunc,
 * cuStreamAddCallback) and memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64,
 * cuStreamBatchMemOp).
 *
 * A host function runs in the calling thread once the stream's earlier work is done, before
 * the call returns: so it is ordered after that work and before anything issued to the
 * stream later, as CUDA orders it; the caller waits where CUDA would not (a host function
 * must not wait for work issued after it, which CUDA forbids as well).
 *
 * A memory operation is a one-thread kernel of the context's memops module (loaded on first
 * use) launched into the stream: a write stores the value (with a system-wide fence unless
 * CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER); a wait reads the word atomically until the
 * condition holds, so the stream's later work waits in the daemon while other streams run
 * (the one that writes the value included).  The address is device memory or mapped pinned
 * memory of the context. */
#include <string.h>

#include "cuda_internal.h"

static const char memops_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry gdev_nop()\n{\n    ret;\n}\n\n"
    ".visible .entry gdev_write32(.param .u64 a, .param .u32 v, .param .u32 fence)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<3>;\n    .reg .pred %p<2>;\n"
    "    ld.param.u64 %rd1, [a];\n    ld.param.u32 %r1, [v];\n    ld.param.u32 %r2, [fence];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    atom.global.exch.b32 %r1, [%rd2], %r1;\n"
    "    setp.eq.u32 %p1, %r2, 0;\n    @%p1 bra DONE;\n    membar.sys;\nDONE:\n    ret;\n}\n\n"
    ".visible .entry gdev_write64(.param .u64 a, .param .u64 v, .param .u32 fence)\n{\n"
    "    .reg .b64 %rd<4>;\n    .reg .b32 %r<2>;\n    .reg .pred %p<2>;\n"
    "    ld.param.u64 %rd1, [a];\n    ld.param.u64 %rd3, [v];\n    ld.param.u32 %r1, [fence];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    atom.global.exch.b64 %rd3, [%rd2], %rd3;\n"
    "    setp.eq.u32 %p1, %r1, 0;\n    @%p1 bra DONE;\n    membar.sys;\nDONE:\n    ret;\n}\n\n"
    /* op: 0 GEQ ((s32)(*a - v) >= 0), 1 EQ, 2 AND ((*a & v) != 0), 3 NOR (~(*a | v) != 0) */
    ".visible .entry gdev_wait32(.param .u64 a, .param .u32 v, .param .u32 op)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<6>;\n    .reg .pred %p<3>;\n"
    "    ld.param.u64 %rd1, [a];\n    ld.param.u32 %r1, [v];\n    ld.param.u32 %r2, [op];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\nLOOP:\n    atom.global.or.b32 %r3, [%rd2], 0;\n"
    "    sub.s32 %r4, %r3, %r1;\n    setp.ge.s32 %p1, %r4, 0;\n"
    "    setp.eq.u32 %p2, %r2, 1;\n    @%p2 setp.eq.u32 %p1, %r3, %r1;\n"
    "    and.b32 %r5, %r3, %r1;\n    setp.eq.u32 %p2, %r2, 2;\n    @%p2 setp.ne.u32 %p1, %r5, 0;\n"
    "    or.b32 %r5, %r3, %r1;\n    not.b32 %r5, %r5;\n    setp.eq.u32 %p2, %r2, 3;\n"
    "    @%p2 setp.ne.u32 %p1, %r5, 0;\n    @!%p1 bra LOOP;\n    ret;\n}\n\n"
    ".visible .entry gdev_wait64(.param .u64 a, .param .u64 v, .param .u32 op)\n{\n"
    "    .reg .b64 %rd<6>;\n    .reg .b32 %r<2>;\n    .reg .pred %p<3>;\n"
    "    ld.param.u64 %rd1, [a];\n    ld.param.u64 %rd3, [v];\n    ld.param.u32 %r1, [op];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\nLOOP:\n    atom.global.or.b64 %rd4, [%rd2], 0;\n"
    "    sub.s64 %rd5, %rd4, %rd3;\n    setp.ge.s64 %p1, %rd5, 0;\n"
    "    setp.eq.u32 %p2, %r1, 1;\n    @%p2 setp.eq.u64 %p1, %rd4, %rd3;\n"
    "    and.b64 %rd5, %rd4, %rd3;\n    setp.eq.u32 %p2, %r1, 2;\n    @%p2 setp.ne.u64 %p1, %rd5, 0;\n"
    "    or.b64 %rd5, %rd4, %rd3;\n    not.b64 %rd5, %rd5;\n    setp.eq.u32 %p2, %r1, 3;\n"
    "    @%p2 setp.ne.u64 %p1, %rd5, 0;\n    @!%p1 bra LOOP;\n    ret;\n}\n";

static pthread_mutex_t memops_lock = PTHREAD_MUTEX_INITIALIZER;

/* Kernel `name` of the memops module of the current context. */
static CUresult memops_kernel(const char *name, CUfunction *f)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r)
        return r;
    pthread_mutex_lock(&memops_lock);
    if (!c->memops)
        r = cu_load_ptx(c, memops_ptx, strlen(memops_ptx), &c->memops);
    pthread_mutex_unlock(&memops_lock);
    return r ? r : cuModuleGetFunction(f, c->memops, name);
}

CUresult cu_stream_nop(CUstream s)
{
    CUfunction f;
    CUresult r = memops_kernel("gdev_nop", &f);
    return r ? r : cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

/* Launch kernel `name` of the memops module into s. */
static CUresult memop(CUstream s, const char *name, CUdeviceptr addr, uint64_t value,
                      unsigned arg, int wide)
{
    CUfunction f;
    if (!addr || addr % (wide ? 8 : 4))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: address 0x%llx is not aligned", name,
                       (unsigned long long)addr);
    CUresult r = memops_kernel(name, &f);
    if (r)
        return r;
    uint32_t v32 = (uint32_t)value;
    void *params[] = {&addr, wide ? (void *)&value : (void *)&v32, &arg};
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags,
                           int wide)
{
    unsigned op = flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH;
    if (op > CU_STREAM_WAIT_VALUE_NOR)
        return CUDA_ERROR_INVALID_VALUE;
    return memop(s, wide ? "gdev_wait64" : "gdev_wait32", addr, value, op, wide);
}

static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags,
                            int wide)
{
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    return memop(s, wide ? "gdev_write64" : "gdev_write32", addr, value,
                 !(flags & CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), wide);
}

API CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                 unsigned int flags)
{
    return wait_value(s, addr, value, flags, 0);
}

API CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                 unsigned int flags)
{
    return wait_value(s, addr, value, flags, 1);
}

API CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                  unsigned int flags)
{
    return write_value(s, addr, value, flags, 0);
}

API CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                  unsigned int flags)
{
    return write_value(s, addr, value, flags, 1);
}

/* The operations in order; a flush or barrier orders nothing more than the stream does. */
API CUresult cuStreamBatchMemOp(CUstream s, unsigned int count,
                                CUstreamBatchMemOpParams *ops, unsigned int flags)
{
    CUresult r = CUDA_SUCCESS;
    if (flags || (count && !ops) || count > 256)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count && !r; i++) {
        const CUstreamBatchMemOpParams *o = &ops[i];
        switch (o->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value(s, o->waitValue.address, o->waitValue.value64, o->waitValue.flags,
                           o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = write_value(s, o->writeValue.address, o->writeValue.value64,
                            o->writeValue.flags, o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64);
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            break;
        default:
            r = cu_fail(CUDA_ERROR_INVALID_VALUE, "cuStreamBatchMemOp: operation %d",
                        (int)o->operation);
        }
    }
    return r;
}

API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuStreamSynchronize(s); /* everything issued before has run */
    if (!r)
        fn(data);
    return r;
}

/* The callback learns the stream's status (a faulted context's error), as in CUDA. */
API CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data,
                                 unsigned int flags)
{
    LIVE(c);
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    cb(s, cuStreamSynchronize(s), data);
    return CUDA_SUCCESS;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuStreamWriteValue32) PTSZ(cuStreamWaitValue32) PTSZ(cuStreamWriteValue64)
PTSZ(cuStreamWaitValue64) PTSZ(cuStreamBatchMemOp) PTSZ(cuStreamAddCallback)
PTSZ(cuLaunchHostFunc)
