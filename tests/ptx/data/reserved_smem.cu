// The reserved shared memory region (tests/ptx/test_reserved_smem.py): cooperative groups'
// tiles wider than a warp keep their scratch there on sm_80 and later.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// out[t] = the sum of in[] over thread t's tile of 64 (then of 128) threads; the block's own
// shared memory (static and dynamic) holds in[] meanwhile and must come through untouched
extern "C" __global__ void tile_sums(const int *in, int *out64, int *out128, int *echo)
{
    __shared__ int mine[256];
    extern __shared__ int dyn[];
    cg::thread_block block = cg::this_thread_block();
    unsigned t = block.thread_rank();
    mine[t] = in[t];
    dyn[t] = -in[t];
    block.sync();
    cg::thread_block_tile<64> t64 = cg::tiled_partition<64>(block);
    out64[t] = cg::reduce(t64, mine[t], cg::plus<int>());
    cg::thread_block_tile<128> t128 = cg::tiled_partition<128>(block);
    out128[t] = cg::reduce(t128, dyn[t], cg::plus<int>());
    t128.sync();
    echo[t] = mine[t] + dyn[t];
}

// the registers themselves and where the block's shared memory lies
extern "C" __global__ void where(unsigned *out)
{
    __shared__ int mine[8];
    extern __shared__ int dyn[];
    unsigned v[5];
    asm("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(v[0]));
    asm("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(v[1]));
    asm("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(v[2]));
    asm("mov.u32 %0, %%reserved_smem_offset_0;" : "=r"(v[3]));
    asm("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(v[4]));
    for (int k = 0; k < 5; k++)
        out[k] = v[k];
    out[5] = (unsigned)__cvta_generic_to_shared(mine);
    out[6] = (unsigned)__cvta_generic_to_shared(dyn);
    mine[0] = dyn[0] = 0;
}
