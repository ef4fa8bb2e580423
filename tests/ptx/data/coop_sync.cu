// Grid-wide barriers (cooperative_groups::this_grid().sync(), as nvcc emits it: a spin on
// the grid workspace of a cooperative launch) in a loop, over many blocks.  Each round reads
// the neighbouring block's value of the previous round, so a barrier that lets one block run
// ahead, or a schedule that does not keep every block resident, gives a wrong result (or
// never ends).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// rounds of a[i] = (a[(i + 1) % n] * 3 + r) % 1000003 over the whole grid (two barriers a
// round: one after the read, one after the write)
extern "C" __global__ void rotate(int *a, int *tmp, int rounds)
{
    cg::grid_group g = cg::this_grid();
    unsigned n = (unsigned)g.size(), i = (unsigned)g.thread_rank();
    for (int r = 0; r < rounds; r++) {
        tmp[i] = (a[(i + 1) % n] * 3 + r) % 1000003;
        g.sync();
        a[i] = tmp[i];
        g.sync();
    }
}

// every block counts itself in, then each thread sees the whole grid's count; block `quit`
// leaves before the barrier (a grid barrier that can never complete) unless quit < 0
extern "C" __global__ void census(unsigned *count, unsigned *seen, int quit)
{
    cg::grid_group g = cg::this_grid();
    if ((int)blockIdx.x == quit)
        return;
    if (threadIdx.x == 0)
        atomicAdd(count, 1u);
    g.sync();
    seen[g.thread_rank()] = *(volatile unsigned *)count;
}
