// Warp collectives over member masks that differ between the lanes of one warp
// (tests/ptx/test_warp_groups.py): the groups of labeled_partition, one per label, as
// cooperative groups and the *_sync intrinsics use them.  Lanes whose key is negative do
// not take part.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void groups(const int *key, const int *val, int *mx, unsigned *sum,
                                  unsigned *bal, unsigned *flags, unsigned *all_mask,
                                  int *cg_max)
{
    unsigned t = threadIdx.x;
    if (key[t] < 0)
        return;
    int v = val[t];
    unsigned m = __match_any_sync(__activemask(), key[t]);
    mx[t] = __reduce_max_sync(m, v);
    sum[t] = __reduce_add_sync(m, (unsigned)v);
    bal[t] = __ballot_sync(m, v & 1);
    flags[t] = __all_sync(m, v > 0) | (__any_sync(m, v > 900) << 1) |
               (__uni_sync(m, v & 1) << 2);
    int same;
    all_mask[t] = __match_all_sync(m, v >> 8, &same);
    flags[t] |= same << 3;
    cg::coalesced_group active = cg::coalesced_threads();
    auto g = cg::labeled_partition(active, key[t]);
    cg_max[t] = cg::reduce(g, v, cg::greater<int>());
}
