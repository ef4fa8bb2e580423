// Empty-kernel launch + cudaDeviceSynchronize through gdev-py's libcudart.so.13, for
// scripts/bench/clib.py: rt_empty N prints "median_us p99_us".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty() {}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    std::vector<double> t(n);
    empty<<<1, 1>>>();
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    for (int i = 0; i < n; i++) {
        auto t0 = std::chrono::steady_clock::now();
        empty<<<1, 1>>>();
        if (cudaDeviceSynchronize() != cudaSuccess)
            return 1;
        t[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                   .count();
    }
    std::sort(t.begin(), t.end());
    printf("%.1f %.1f\n", t[n / 2], t[(int)(n * 0.99)]);
    return 0;
}
