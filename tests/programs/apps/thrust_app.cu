// Thrust (CUB underneath: onesweep radix sort with decoupled look-back, warp-synchronous
// ranking, two-pass reductions, scans) on 20000 elements, each result checked on the host.
// Prints "thrust ok" and one flag per algorithm.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>
#include <thrust/unique.h>

struct square {
    __host__ __device__ long long operator()(int x) const { return (long long)x * x; }
};
struct is_odd {
    __host__ __device__ bool operator()(int x) const { return x & 1; }
};

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 20000;
    std::vector<int> h(n);
    unsigned s = 12345;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (int)(s >> 8) % 100000 - 50000;
    }
    thrust::device_vector<int> d(h.begin(), h.end()), idx(n);
    thrust::sequence(idx.begin(), idx.end());
    thrust::sort_by_key(d.begin(), d.end(), idx.begin());
    std::vector<int> want(h), got(n), perm(n);
    std::stable_sort(want.begin(), want.end());
    thrust::copy(d.begin(), d.end(), got.begin());
    thrust::copy(idx.begin(), idx.end(), perm.begin());
    bool sorted = got == want, keys = true;
    for (int i = 0; i < n; i++)
        keys = keys && h[perm[i]] == got[i];
    long long sq = thrust::transform_reduce(d.begin(), d.end(), square(), 0LL,
                                            thrust::plus<long long>());
    long long want_sq = 0, want_sum = 0;
    int want_odd = 0;
    for (int i = 0; i < n; i++) {
        want_sq += (long long)h[i] * h[i];
        want_odd += h[i] & 1;
    }
    for (int i = 0; i < n - 1; i++)
        want_sum += want[i];
    thrust::device_vector<int> scan(n);
    thrust::exclusive_scan(d.begin(), d.end(), scan.begin());
    int odd = thrust::count_if(d.begin(), d.end(), is_odd());
    int uniq = thrust::unique(d.begin(), d.end()) - d.begin();
    int want_uniq = std::unique(want.begin(), want.end()) - want.begin();
    bool ok = sorted && keys && sq == want_sq && (int)scan[n - 1] == (int)want_sum &&
              odd == want_odd && uniq == want_uniq;
    printf("thrust %s n=%d sort=%d keys=%d sumsq=%d scan=%d count=%d unique=%d\n",
           ok ? "ok" : "FAILED", n, sorted, keys, sq == want_sq,
           (int)scan[n - 1] == (int)want_sum, odd == want_odd, uniq == want_uniq);
    return !ok;
}
