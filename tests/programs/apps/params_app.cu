// Kernel parameters beyond the old 4 KiB limit (CUDA 12.1 raised it to 32764 bytes for
// Volta and later; the LargeKernelParameter sample's shape), run unchanged on gdev-py
// (tests/programs/test_params_app.py): a struct of 8000 bytes by value, one of 32000 bytes
// next to a pointer, and the large launch captured into a graph and replayed.
#include <cstdio>
#include <cstdlib>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

template <int N> struct Values { int v[N]; };

template <int N>
__global__ void sum(Values<N> p, long long *out)
{
    long long s = 0;
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        s += (long long)p.v[i] * (i + 1);
    atomicAdd((unsigned long long *)out, (unsigned long long)s);
}

template <int N>
static long long expected(const Values<N> &p)
{
    long long s = 0;
    for (int i = 0; i < N; i++)
        s += (long long)p.v[i] * (i + 1);
    return s;
}

template <int N>
static void fill(Values<N> *p, int seed)
{
    for (int i = 0; i < N; i++)
        p->v[i] = (i * 2654435761u + seed) % 1000 - 500;
}

template <int N>
static bool launch_and_check(const char *name, long long *d, cudaStream_t s, bool captured)
{
    static Values<N> p;          // too large for some threads' stacks
    fill(&p, N);
    long long got = 0;
    CHECK(cudaMemsetAsync(d, 0, sizeof *d, s));
    if (captured) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        sum<N><<<2, 128, 0, s>>>(p, d);
        CHECK(cudaStreamEndCapture(s, &g));
        CHECK(cudaGraphInstantiate(&ge, g, 0));
        fill(&p, 1);              // the graph holds its own copy of the arguments
        CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaGraphExecDestroy(ge));
        CHECK(cudaGraphDestroy(g));
        fill(&p, N);
    } else {
        sum<N><<<2, 128, 0, s>>>(p, d);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpyAsync(&got, d, sizeof got, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    long long want = expected(p) * (captured ? 4 : 2);   // two blocks (and two replays)
    bool ok = got == want;
    printf("%s %s\n", name, ok ? "ok" : "FAILED");
    if (!ok)
        printf("  got %lld want %lld\n", got, want);
    return ok;
}

int main(void)
{
    long long *d;
    cudaStream_t s;
    CHECK(cudaMalloc(&d, sizeof *d));
    CHECK(cudaStreamCreate(&s));
    bool ok = launch_and_check<2000>("params_8000", d, s, false);
    ok &= launch_and_check<8000>("params_32000", d, s, false);
    ok &= launch_and_check<8000>("params_graph", d, s, true);
    CHECK(cudaFree(d));
    return ok ? 0 : 1;
}
