// Survey corpus: split arrive/wait barriers (sm_80/sm_90 mbarrier) as public programs use
// them: cuda::barrier with cuda::memcpy_async (CUDA samples' globalToShmemAsyncCopy),
// cooperative_groups::memcpy_async, arrive_and_drop, a producer/consumer pair of warps
// (simpleAWBarrier's shape) and cooperative_groups' elected thread.  Built for compute_90.
#include <cuda/barrier>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

extern "C" __global__ void staged_copy(const float *in, float *out, int n)
{
    __shared__ float buf[64];
    __shared__ block_barrier bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0)
        init(&bar, block.size());
    block.sync();
    for (int base = 0; base + 64 <= n; base += 64) {
        cuda::memcpy_async(block, buf, in + base, sizeof(float) * 64, bar);
        bar.arrive_and_wait();
        out[base + threadIdx.x] = buf[threadIdx.x] * 2.0f + buf[63 - threadIdx.x];
        bar.arrive_and_wait();
    }
}

extern "C" __global__ void cg_copy(const float *in, float *out)
{
    __shared__ float buf[64];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, buf, in + blockIdx.x * 64, sizeof(float) * 64);
    cg::wait(block);
    out[blockIdx.x * 64 + threadIdx.x] = buf[63 - threadIdx.x];
}

extern "C" __global__ void drop_half(float *out)
{
    __shared__ block_barrier bar;
    __shared__ float s[64];
    if (threadIdx.x == 0)
        init(&bar, blockDim.x);
    __syncthreads();
    s[threadIdx.x] = threadIdx.x;
    bar.arrive_and_wait();
    out[threadIdx.x] = s[63 - threadIdx.x];
    if (threadIdx.x >= 32) {
        bar.arrive_and_drop();
        return;
    }
    s[threadIdx.x] += 1;
    bar.arrive_and_wait();
    out[64 + threadIdx.x] = s[31 - threadIdx.x];
}

// warp 1 produces 8 rounds into buf, warp 0 consumes: "full" and "empty" barriers
extern "C" __global__ void producer_consumer(const float *in, float *out)
{
    __shared__ float buf[32];
    __shared__ block_barrier full, empty;
    int lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        init(&full, 64);
        init(&empty, 64);
    }
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < 8; r++) {
        if (threadIdx.x >= 32)
            buf[lane] = in[r * 32 + lane] + r;
        full.arrive_and_wait();
        if (threadIdx.x < 32)
            acc += buf[lane];
        empty.arrive_and_wait();
    }
    if (threadIdx.x < 32)
        out[lane] = acc;
}

extern "C" __global__ void elected(unsigned *out)
{
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    cg::invoke_one(warp, [&] { out[threadIdx.x / 32] = threadIdx.x; });
    out[2 + threadIdx.x] = warp.thread_rank();
}
