// Asynchronous copies and split barriers as CUDA 11+ programs write them, run unchanged
// on gdev-py (tests/programs/test_async_apps.py): cuda::barrier with cuda::memcpy_async
// (the CUDA samples' globalToShmemAsyncCopy), cuda::pipeline double buffering,
// cooperative_groups::memcpy_async, arrive_and_drop, a producer and a consumer warp
// handing tiles over two barriers (simpleAWBarrier's shape), cooperative_groups'
// invoke_one.  The program checks its own results and prints "<name> ok" for each.
#include <cstdio>
#include <cstdlib>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define TILE 128

// out[i] = 2 * in[i] + in[tile mirror of i], tile by tile through shared memory
__global__ void barrier_copy(const float *in, float *out, int n)
{
    __shared__ float buf[TILE];
    __shared__ block_barrier bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0)
        init(&bar, block.size());
    block.sync();
    for (int base = blockIdx.x * TILE; base < n; base += gridDim.x * TILE) {
        cuda::memcpy_async(block, buf, in + base, sizeof(float) * TILE, bar);
        bar.arrive_and_wait();
        out[base + threadIdx.x] = 2.0f * buf[threadIdx.x] + buf[TILE - 1 - threadIdx.x];
        bar.arrive_and_wait();
    }
}

// sum of each tile, loaded two stages ahead with cuda::pipeline
__global__ void pipeline_sum(const float *in, float *out, int tiles)
{
    __shared__ float buf[2][TILE];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, &state);
    float acc = 0.0f;
    for (int fetch = 0, use = 0; use < tiles; use++) {
        for (; fetch < tiles && fetch < use + 2; fetch++) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, buf[fetch % 2], in + fetch * TILE, sizeof(float) * TILE,
                               pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        acc += buf[use % 2][threadIdx.x];
        pipe.consumer_release();
    }
    out[threadIdx.x] = acc;
}

__global__ void cg_reverse(const float *in, float *out)
{
    __shared__ float buf[TILE];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, buf, in + blockIdx.x * TILE, sizeof(float) * TILE);
    cg::wait(block);
    out[blockIdx.x * TILE + threadIdx.x] = buf[TILE - 1 - threadIdx.x];
}

__global__ void drop_half(int *out)
{
    __shared__ block_barrier bar;
    __shared__ int s[TILE];
    if (threadIdx.x == 0)
        init(&bar, blockDim.x);
    __syncthreads();
    s[threadIdx.x] = threadIdx.x;
    bar.arrive_and_wait();
    out[threadIdx.x] = s[TILE - 1 - threadIdx.x];
    if (threadIdx.x >= TILE / 2) {
        bar.arrive_and_drop();
        return;
    }
    s[threadIdx.x] += 1000;
    bar.arrive_and_wait();            // only the first half is expected now
    out[TILE + threadIdx.x] = s[TILE / 2 - 1 - threadIdx.x];
}

// warp 1 produces `rounds` tiles of 32, warp 0 consumes; the consumer's first wait spins
__global__ void producer_consumer(const float *in, float *out, int rounds)
{
    __shared__ float slot[32];
    __shared__ block_barrier full, empty;
    int lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        init(&full, 64);
        init(&empty, 64);
    }
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < rounds; r++) {
        if (threadIdx.x >= 32) {
            float v = in[r * 32 + lane];
            for (int k = 0; k < lane; k++)       // uneven work before the hand-over
                v = v * 1.0f + 0.0f;
            slot[lane] = v;
            (void)full.arrive();
            empty.arrive_and_wait();
        } else {
            full.arrive_and_wait();
            acc += slot[lane];
            (void)empty.arrive();
        }
    }
    if (threadIdx.x < 32)
        out[lane] = acc;
}

__global__ void elected(unsigned *out)
{
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    cg::invoke_one(warp, [&] { atomicAdd(&out[0], 1u + threadIdx.x); });
}

static float *upload(const float *h, int n)
{
    float *d;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

static int check(const char *name, int ok)
{
    printf("%s %s\n", name, ok ? "ok" : "FAILED");
    return ok;
}

int main(void)
{
    const int n = 16 * TILE, tiles = 16, rounds = 12;
    float *h = (float *)malloc(n * sizeof(float)), *r = (float *)malloc(n * sizeof(float));
    int all = 1;
    for (int i = 0; i < n; i++)
        h[i] = (float)((i * 7) % 23) - 11.0f;
    float *din = upload(h, n), *dout;
    CK(cudaMalloc(&dout, n * sizeof(float)));

    barrier_copy<<<4, TILE>>>(din, dout, n);
    CK(cudaMemcpy(r, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    int ok = 1;
    for (int i = 0; i < n; i++) {
        int t = i / TILE * TILE, j = i - t;
        ok &= r[i] == 2.0f * h[i] + h[t + TILE - 1 - j];
    }
    all &= check("barrier_copy", ok);

    pipeline_sum<<<1, TILE>>>(din, dout, tiles);
    CK(cudaMemcpy(r, dout, TILE * sizeof(float), cudaMemcpyDeviceToHost));
    ok = 1;
    for (int j = 0; j < TILE; j++) {
        float s = 0.0f;
        for (int t = 0; t < tiles; t++)
            s += h[t * TILE + j];
        ok &= r[j] == s;
    }
    all &= check("pipeline_sum", ok);

    cg_reverse<<<tiles, TILE>>>(din, dout);
    CK(cudaMemcpy(r, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    ok = 1;
    for (int i = 0; i < n; i++)
        ok &= r[i] == h[i / TILE * TILE + TILE - 1 - i % TILE];
    all &= check("cg_memcpy_async", ok);

    int *di, hi[2 * TILE];
    CK(cudaMalloc(&di, sizeof hi));
    drop_half<<<1, TILE>>>(di);
    CK(cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost));
    ok = 1;
    for (int j = 0; j < TILE; j++)
        ok &= hi[j] == TILE - 1 - j;
    for (int j = 0; j < TILE / 2; j++)
        ok &= hi[TILE + j] == TILE / 2 - 1 - j + 1000;
    all &= check("arrive_and_drop", ok);

    producer_consumer<<<1, 64>>>(din, dout, rounds);
    CK(cudaMemcpy(r, dout, 32 * sizeof(float), cudaMemcpyDeviceToHost));
    ok = 1;
    for (int l = 0; l < 32; l++) {
        float s = 0.0f;
        for (int k = 0; k < rounds; k++)
            s += h[k * 32 + l];
        ok &= r[l] == s;
    }
    all &= check("producer_consumer", ok);

    unsigned *du, hu = 0;
    CK(cudaMalloc(&du, sizeof hu));
    CK(cudaMemset(du, 0, sizeof hu));
    elected<<<1, 96>>>(du);
    CK(cudaMemcpy(&hu, du, sizeof hu, cudaMemcpyDeviceToHost));
    all &= check("invoke_one", hu == 1 + 33 + 65);     // the leaders: threads 0, 32, 64
    CK(cudaDeviceSynchronize());
    return all ? 0 : 1;
}
