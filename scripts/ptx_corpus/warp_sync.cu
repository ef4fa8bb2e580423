// Survey corpus: warp intrinsics, votes, block-wide sync variants, fences, clocks, special
// registers, cooperative groups.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void warp_ops(const int *in, int *out, float *fout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    float f = (float)v;
    unsigned int mask = __activemask();
    int s = __shfl_sync(0xffffffffu, v, 3);
    s += __shfl_up_sync(0xffffffffu, v, 1);
    s += __shfl_down_sync(0xffffffffu, v, 2);
    s += __shfl_xor_sync(0xffffffffu, v, 4);
    s += __shfl_sync(0xffffffffu, v, 5, 16);
    f += __shfl_xor_sync(0xffffffffu, f, 1);
    double d = __shfl_down_sync(0xffffffffu, (double)v, 1);
    long long l = __shfl_sync(0xffffffffu, (long long)v << 33, 7);
    unsigned int ballot = __ballot_sync(0xffffffffu, v > 10);
    int any = __any_sync(0xffffffffu, v == 7);
    int all = __all_sync(0xffffffffu, v >= 0);
    unsigned int match = __match_any_sync(0xffffffffu, v & 3);
    int pred;
    unsigned int match_all = __match_all_sync(0xffffffffu, v & 1, &pred);
    __syncwarp();
    int cnt = __syncthreads_count(v > 0);
    int land = __syncthreads_and(v > 0);
    int lor = __syncthreads_or(v > 0);
    __threadfence();
    __threadfence_block();
    __threadfence_system();
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    long long t = clock64() + clock();
    __nanosleep(10);
    if (i < n) {
        out[i] = s + __popc(ballot) + any + all + __popc(match) + match_all + pred + cnt + land +
                 lor + (int)mask + (int)lane + (int)(t & 1) + (int)d + (int)(l >> 33) +
                 (int)(blockDim.y * gridDim.z + threadIdx.z + blockIdx.z + gridDim.y);
        fout[i] = f;
    }
}

extern "C" __global__ void cg_reduce(const int *in, int *out, int n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    int i = block.group_index().x * block.size() + block.thread_rank();
    int v = i < n ? in[i] : 0;
    for (int off = tile.size() / 2; off > 0; off /= 2)
        v += tile.shfl_down(v, off);
    block.sync();
    if (tile.thread_rank() == 0)
        atomicAdd(out, v);
}
