// cooperative_groups::this_grid() (it reads %envreg1/%envreg2, the grid workspace a
// cooperative launch would get): a grid-stride loop by grid rank and size runs; grid.sync()
// in a launch that is not cooperative traps, as CUDA's does.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void stride(int *v, int n)
{
    cg::grid_group g = cg::this_grid();
    for (unsigned long long i = g.thread_rank(); i < (unsigned long long)n; i += g.size())
        v[i] = (int)i * 2 + (int)g.num_blocks();
}

extern "C" __global__ void synced(int *v, int n)
{
    cg::grid_group g = cg::this_grid();
    int i = (int)g.thread_rank();
    if (i < n)
        v[i] = 1;
    g.sync();
    if (i < n)
        v[i] += v[(i + 1) % n];
}
