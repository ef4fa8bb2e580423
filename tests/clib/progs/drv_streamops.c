/* Streams, contexts, devices and functions of the driver API (linked with gdev-py's
 * libcuda.so.1): host functions ordered with kernels on two streams, wait/write value
 * between streams (32 and 64 bits, each condition, a batch), stream callbacks, a stream's
 * flags, priority, context, id, device and attributes, context limits, ids, flags and
 * events of a whole context, device UUIDs and properties, module and function queries and
 * the occupancy calculator, with the documented error cases.  Prints "drv_streamops ok" on
 * success; the first failure names its line. */
#include <cudaProfiler.h>
#include <stdint.h>
#include <string.h>

#include "drv_check.h"

static const char ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry store(.param .u64 p, .param .u32 v)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<2>;\n    ld.param.u64 %rd1, [p];\n"
    "    ld.param.u32 %r1, [v];\n    cvta.to.global.u64 %rd2, %rd1;\n"
    "    st.global.u32 [%rd2], %r1;\n    ret;\n}\n\n"
    ".visible .entry other()\n{\n    ret;\n}\n";

static CUfunction store;
static volatile unsigned *host; /* pinned, mapped: [0..15] flags and results */
static CUdeviceptr dev_host;
static int order[8], norder;

static CUresult put(CUstream s, int index, unsigned v)
{
    CUdeviceptr p = dev_host + 4u * (unsigned)index;
    void *args[] = {&p, &v};
    return cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static void host_fn(void *data)
{
    order[norder++] = (int)(intptr_t)data;
    order[norder++] = (int)host[0]; /* the kernel before it has run */
    host[1] = 2;
}

static void callback(CUstream s, CUresult status, void *data)
{
    (void)s;
    order[norder++] = status == CUDA_SUCCESS ? (int)(intptr_t)data : -1;
}

static int host_functions(CUstream a, CUstream b)
{
    CK(put(a, 0, 1));
    CK(cuLaunchHostFunc(a, host_fn, (void *)(intptr_t)10));
    CK(cuStreamWaitValue32(b, dev_host + 4, 2, CU_STREAM_WAIT_VALUE_EQ));
    CK(put(b, 2, 3));
    CK(cuStreamAddCallback(b, callback, (void *)(intptr_t)20, 0));
    CK(cuCtxSynchronize());
    EXPECT(norder == 3 && order[0] == 10 && order[1] == 1 && order[2] == 20);
    EXPECT(host[2] == 3);
    EXPECT(cuStreamAddCallback(b, callback, NULL, 1) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchHostFunc(b, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    return 0;
}

/* b waits for a value a writes: b's kernel runs only after the write. */
static int wait_write(CUstream a, CUstream b)
{
    int nor = 0, wide = 0;
    CK(cuDeviceGetAttribute(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 0));
    CK(cuDeviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
    EXPECT(nor == 1 && wide == 1);
    host[4] = 0, host[5] = 0;
    CK(cuStreamWaitValue32(b, dev_host + 16, 5, CU_STREAM_WAIT_VALUE_GEQ));
    CK(put(b, 5, 42));
    EXPECT(cuStreamQuery(b) == CUDA_ERROR_NOT_READY);
    EXPECT(host[5] == 0);
    CK(cuStreamWriteValue32(a, dev_host + 16, 7, 0));
    CK(cuStreamSynchronize(b));
    EXPECT(host[4] == 7 && host[5] == 42);
    /* 64 bits, AND and NOR conditions, and a batch */
    host[8] = host[9] = 0;
    CK(cuStreamWaitValue64(b, dev_host + 32, 0x100000000ull, CU_STREAM_WAIT_VALUE_AND));
    CUstreamBatchMemOpParams ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[0].waitValue.address = dev_host + 40;
    ops[0].waitValue.value = 0xfffffff0u;
    ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_NOR; /* until a low bit is clear... */
    ops[1].operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[1].writeValue.address = dev_host + 44;
    ops[1].writeValue.value = 9;
    host[10] = 0xf;  /* ...which it is not yet */
    CK(cuStreamBatchMemOp(b, 2, ops, 0));
    CK(cuStreamWriteValue64(a, dev_host + 32, 0x300000000ull, 0));
    CK(cuStreamSynchronize(a));
    EXPECT(cuStreamQuery(b) == CUDA_ERROR_NOT_READY);
    host[10] = 0xe;
    CK(cuStreamSynchronize(b));
    EXPECT(host[11] == 9);
    EXPECT(cuStreamWaitValue32(b, dev_host + 2, 1, 0) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamWriteValue32(b, dev_host, 1, 0x10) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamWaitValue32(b, dev_host, 1, 7) == CUDA_ERROR_INVALID_VALUE);
    return 0;
}

static int stream_info(CUcontext ctx, CUdevice dev, CUstream a, CUstream b)
{
    unsigned flags = 9;
    int prio = 9, least = 9, greatest = 9;
    CUcontext c = NULL;
    CUdevice d = -1;
    unsigned long long ida = 0, idb = 0, idn = 9;
    CK(cuStreamGetFlags(a, &flags));
    EXPECT(flags == CU_STREAM_NON_BLOCKING);
    CK(cuStreamGetFlags(NULL, &flags));
    EXPECT(flags == CU_STREAM_DEFAULT);
    CK(cuCtxGetStreamPriorityRange(&least, &greatest));
    EXPECT(least == 0 && greatest == 0);
    CK(cuStreamGetPriority(b, &prio));
    EXPECT(prio == 0);
    CK(cuStreamGetCtx(a, &c));
    EXPECT(c == ctx);
    CK(cuStreamGetDevice(b, &d));
    EXPECT(d == dev);
    CK(cuStreamGetId(a, &ida));
    CK(cuStreamGetId(b, &idb));
    CK(cuStreamGetId(NULL, &idn));
    EXPECT(ida && idb && ida != idb && idn == 0);
    CUstreamAttrValue v, w;
    memset(&v, 0, sizeof v);
    v.syncPolicy = CU_SYNC_POLICY_YIELD;
    CK(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    CK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &w));
    EXPECT(w.syncPolicy == CU_SYNC_POLICY_YIELD);
    CK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &w));
    EXPECT(w.syncPolicy == CU_SYNC_POLICY_AUTO);
    CK(cuStreamCopyAttributes(b, a));
    CK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &w));
    EXPECT(w.syncPolicy == CU_SYNC_POLICY_YIELD);
    memset(&v, 0, sizeof v);
    v.priority = -1;
    EXPECT(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v) == CUDA_ERROR_NOT_SUPPORTED);
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.num_bytes = 4096;
    EXPECT(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) ==
           CUDA_ERROR_INVALID_VALUE);
    return 0;
}

static int context_info(CUcontext ctx, CUdevice dev)
{
    size_t limit = 0;
    unsigned long long id1 = 0, id2 = 0;
    unsigned flags = 0;
    CUcontext other;
    CK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4 << 20));
    CK(cuCtxGetLimit(&limit, CU_LIMIT_PRINTF_FIFO_SIZE));
    EXPECT(limit == 4 << 20);
    CK(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
    EXPECT(limit == 1024);
    CK(cuCtxGetLimit(&limit, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT));
    EXPECT(limit == 2048); /* CUDA's default, the daemon's (docs/clib.md) */
    CK(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 4096));
    EXPECT(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 1 << 20) ==
           CUDA_ERROR_INVALID_VALUE); /* beyond the daemon's bound: refused, unchanged */
    CK(cuCtxGetLimit(&limit, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT));
    EXPECT(limit == 4096);
    CK(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 4));
    CK(cuCtxGetLimit(&limit, CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH));
    EXPECT(limit == 4);
    EXPECT(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 25) == CUDA_ERROR_UNSUPPORTED_LIMIT);
    EXPECT(cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 1) == CUDA_ERROR_UNSUPPORTED_LIMIT);
    /* the device heap's size is the daemon's: whole pages, at most the context's share */
    EXPECT(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (size_t)1 << 50) == CUDA_ERROR_OUT_OF_MEMORY);
    CK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (1 << 20) + 1));
    CK(cuCtxGetLimit(&limit, CU_LIMIT_MALLOC_HEAP_SIZE));
    EXPECT(limit == (1 << 20) + 4096);
    CK(cuCtxGetId(ctx, &id1));
    CK(cuCtxCreate(&other, NULL, 0, dev));
    CK(cuCtxGetId(NULL, &id2));
    EXPECT(id1 && id2 && id1 != id2);
    CK(cuCtxDestroy(other));
    CK(cuCtxSetCurrent(ctx));
    CK(cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC));
    CK(cuCtxGetFlags(&flags));
    EXPECT(flags == CU_CTX_SCHED_BLOCKING_SYNC);
    CUsharedconfig sc;
    CK(cuCtxGetSharedMemConfig(&sc));
    CK(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    CK(cuCtxResetPersistingL2Cache());
    CUevent e;
    CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CK(put(NULL, 12, 77));
    CK(cuCtxRecordEvent(ctx, e));
    CK(cuCtxWaitEvent(ctx, e));
    CK(cuEventSynchronize(e));
    EXPECT(host[12] == 77);
    CK(cuEventDestroy(e));
    CUuuid u0, u1;
    CK(cuDeviceGetUuid(&u0, 0));
    CK(cuDeviceGetUuid(&u1, 1));
    EXPECT(memcmp(&u0, &u1, sizeof u0) != 0);
    char luid[8];
    unsigned mask;
    EXPECT(cuDeviceGetLuid(luid, &mask, dev) == CUDA_ERROR_NOT_SUPPORTED);
    CUdevprop prop;
    CK(cuDeviceGetProperties(&prop, dev));
    EXPECT(prop.maxThreadsPerBlock == 1024 && prop.SIMDWidth == 32 && prop.maxGridSize[1] > 0);
    CK(cuProfilerStart());
    CK(cuProfilerStop());
    return 0;
}

static int function_info(CUmodule mod)
{
    unsigned n = 0;
    CUfunction fns[4] = {0};
    CUmodule m = NULL;
    CUfunctionLoadingState st;
    CUmoduleLoadingMode mode;
    CK(cuModuleGetFunctionCount(&n, mod));
    EXPECT(n == 2);
    CK(cuModuleEnumerateFunctions(fns, 4, mod));
    EXPECT((fns[0] == store || fns[1] == store) && fns[0] && fns[1] && !fns[2]);
    CK(cuFuncGetModule(&m, store));
    EXPECT(m == mod);
    CK(cuFuncIsLoaded(&st, store));
    EXPECT(st == CU_FUNCTION_LOADING_STATE_LOADED);
    CK(cuFuncLoad(store));
    CK(cuFuncSetSharedMemConfig(store, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
    EXPECT(cuFuncSetSharedMemConfig(store, (CUsharedconfig)7) == CUDA_ERROR_INVALID_VALUE);
    CK(cuModuleGetLoadingMode(&mode));
    EXPECT(mode == CU_MODULE_EAGER_LOADING);
    int grid = 0, block = 0, mps = 0;
    CK(cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CK(cuOccupancyMaxPotentialBlockSize(&grid, &block, store, NULL, 0, 0));
    EXPECT(block == 1024 && grid == mps);
    CK(cuOccupancyMaxPotentialBlockSize(&grid, &block, store, NULL, 0, 100));
    EXPECT(block == 64 && grid == 16 * mps);
    CK(cuOccupancyMaxPotentialBlockSize(&grid, &block, store, NULL, 32 << 10, 0));
    EXPECT(block == 1024 && grid == mps);
    size_t smem = 0;
    CK(cuOccupancyAvailableDynamicSMemPerBlock(&smem, store, 4, 128));
    EXPECT(smem == 16 << 10);
    CK(cuOccupancyAvailableDynamicSMemPerBlock(&smem, store, 4, 512));
    EXPECT(smem == 0);
    return 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream a, b;
    void *pinned;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&store, mod, "store"));
    CK(cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    memset(pinned, 0, 4096);
    host = pinned;
    CK(cuMemHostGetDevicePointer(&dev_host, pinned, 0));
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreateWithPriority(&b, CU_STREAM_NON_BLOCKING, -3));
    if (host_functions(a, b) || wait_write(a, b) || stream_info(ctx, dev, a, b) ||
        context_info(ctx, dev) || function_info(mod))
        return 1;
    CK(cuStreamDestroy(a));
    CK(cuStreamDestroy(b));
    CK(cuMemFreeHost(pinned));
    CK(cuCtxDestroy(ctx));
    printf("drv_streamops ok\n");
    return 0;
}
