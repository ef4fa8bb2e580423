// Thread block clusters (tests/ptx/test_clusters.py): a launch is a grid of clusters of one
// block, so cooperative groups' cluster API sees each block alone in its cluster.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// per thread: the cluster's view of it, the special registers behind that view, and what
// the block wrote before cluster.sync()
extern "C" __global__ void cluster_view(unsigned *out)
{
    __shared__ unsigned seen[64];
    cg::cluster_group c = cg::this_cluster();
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t, *o = out + g * 10;
    seen[t] = g;
    c.sync();
    o[0] = c.block_rank();
    o[1] = c.num_blocks();
    o[2] = c.block_index().x;
    o[3] = c.dim_blocks().x;
    o[4] = c.thread_rank();
    o[5] = c.num_threads();
    asm("mov.u32 %0, %%aggr_smem_size;" : "=r"(o[6]));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(o[7]));
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(o[8]));
    o[9] = seen[blockDim.x - 1 - t];
}

// a kernel that needs clusters of two blocks
extern "C" __global__ void __cluster_dims__(2, 1, 1) pairs(unsigned *out)
{
    out[blockIdx.x] = cg::this_cluster().block_rank();
}
