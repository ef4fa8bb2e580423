// Dynamic parallelism (the CUDA device runtime, CDP2: gdevd/gpu/ptx/devrt.py): kernels that
// launch kernels, into the per-block NULL stream, device-created non-blocking streams, the
// tail-launch and fire-and-forget streams; nesting to CUDA's depth limit and beyond; more
// launches than pending slots; a child that faults; a launch bomb.
#include <cstdio>

// one thread per element: out[base + i] = base + i
extern "C" __global__ void fill(int *out, int base)
{
    out[base + threadIdx.x] = base + threadIdx.x;
}

// thread 0 of each block fills its block's 32 elements through a child grid
extern "C" __global__ void parent(int *out)
{
    if (threadIdx.x == 0)
        fill<<<1, 32>>>(out, blockIdx.x * 32);
}

// a one-thread child appending v to log
extern "C" __global__ void append(int *log, int *count, int v)
{
    log[atomicAdd(count, 1)] = v;
}

// a tail launch, launches into a created stream and into the NULL stream; the tail
// launch must come last, each stream's launches in issue order; errs[0..2]: what the
// stream and event calls returned
extern "C" __global__ void ordered(int *log, int *count, int *errs)
{
    if (threadIdx.x != 0)
        return;
    cudaStream_t s;
    errs[0] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    append<<<1, 1, 0, cudaStreamTailLaunch>>>(log, count, 100);
    append<<<1, 1, 0, s>>>(log, count, 1);
    append<<<1, 1, 0, s>>>(log, count, 2);
    cudaEvent_t ev;
    errs[1] = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    cudaEventRecord(ev, s);
    cudaStreamWaitEvent(0, ev, 0);
    append<<<1, 1>>>(log, count, 3);
    append<<<1, 1, 0, cudaStreamFireAndForget>>>(log, count, 4);
    cudaEventDestroy(ev);
    errs[2] = cudaStreamDestroy(s);
    log[63] = 7;                        // the parent's own write: visible to its children
}

// depth[d] = d, then a child one level deeper until max; err[d]: the launch's error
extern "C" __global__ void nest(int *depth, int *err, int d, int max)
{
    depth[d] = d;
    if (d < max) {
        nest<<<1, 1>>>(depth, err, d + 1, max);
        err[d] = cudaGetLastError();
    }
}

// every thread launches one child; err[i]: what cudaGetLastError said after it
extern "C" __global__ void many(int *out, int *err)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    fill<<<1, 1>>>(out, i);
    err[i] = cudaGetLastError();
}

// a child writing through a bad pointer
extern "C" __global__ void bad(int *p)
{
    *p = 1;
}

extern "C" __global__ void faulting(int *out)
{
    out[0] = 1;
    bad<<<1, 1>>>((int *)0x10);
}

// each grid counts itself and launches two more: 2^24 grids before the depth limit
extern "C" __global__ void bomb(unsigned long long *count, int *err)
{
    atomicAdd(count, 1ull);
    bomb<<<1, 1>>>(count, err);
    bomb<<<1, 1>>>(count, err);
    int e = cudaGetLastError();
    if (e)
        atomicExch(err, e);
}

// children that print (cdpSimplePrint's shape): each grid prints its depth and block
extern "C" __global__ void hello(int d, int max)
{
    printf("depth %d block %d\n", d, blockIdx.x);
    if (d < max && threadIdx.x == 0)
        hello<<<2, 1>>>(d + 1, max);
}

// the device runtime's queries
extern "C" __global__ void queries(int *out)
{
    int dev = -1;
    out[0] = cudaGetDevice(&dev);
    out[1] = dev;
    out[2] = cudaDeviceGetAttribute(&out[3], cudaDevAttrMaxThreadsPerBlock, dev);
    out[4] = cudaDeviceGetAttribute(&out[5], cudaDevAttrWarpSize, 1);   // no device 1
    cudaStream_t s;
    out[6] = cudaStreamCreateWithFlags(&s, cudaStreamDefault);          // must be non-blocking
    out[7] = cudaGetLastError();
    out[8] = cudaPeekAtLastError();
    cudaDeviceGetAttribute(&out[9], cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&out[10], cudaDevAttrComputeCapabilityMajor, 0);
}

// a child with dynamic shared memory over a 2D grid: each block sums its 64 elements
extern "C" __global__ void block_sums(const int *in, int *out)
{
    extern __shared__ int part[];
    int b = blockIdx.y * gridDim.x + blockIdx.x;
    part[threadIdx.x] = in[b * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[b] = part[0];
}

extern "C" __global__ void sums(const int *in, int *out)
{
    block_sums<<<dim3(2, 3), 64, 64 * sizeof(int)>>>(in, out);
}

// device-side copies in stream order: a memset before a child that adds to the buffer, a
// memcpy of the result after it; errs: a host-to-device kind, a shared-memory source, the
// error string of cudaErrorInvalidValue (its first four bytes)
extern "C" __global__ void add_one(int *p)
{
    p[threadIdx.x] += 1;
}

extern "C" __global__ void copies(int *buf, int *copy, int n, int *errs)
{
    __shared__ int tile[4];
    if (threadIdx.x != 0)
        return;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    errs[0] = cudaMemsetAsync(buf, 0x01, n * sizeof(int), s);
    add_one<<<1, n, 0, s>>>(buf);
    errs[1] = cudaMemcpyAsync(copy, buf, n * sizeof(int), cudaMemcpyDeviceToDevice, s);
    errs[2] = cudaMemcpyAsync(copy, buf, 4, cudaMemcpyHostToDevice, s);
    errs[3] = cudaMemcpyAsync(copy, tile, 4, cudaMemcpyDeviceToDevice, s);
    const char *text = cudaGetErrorString(cudaErrorInvalidValue);
    errs[4] = text[0] | text[1] << 8 | text[2] << 16 | text[3] << 24;
}

// a device-side copy from an address the context does not map
extern "C" __global__ void copy_unmapped(int *dst)
{
    if (threadIdx.x == 0)
        cudaMemcpyAsync(dst, (const void *)0x10, 64, cudaMemcpyDeviceToDevice, 0);
}
