// Recursive device functions: real calls on the interpreter (gdevd/gpu/ptx/calls.py).
// Built with: nvcc -ptx -arch=compute_75 recursion.cu (and -G for recursion.debug.ptx).

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ bool is_odd(int n);
__device__ __noinline__ bool is_even(int n) { return n == 0 ? true : is_odd(n - 1); }
__device__ __noinline__ bool is_odd(int n) { return n == 0 ? false : is_even(n - 1); }

// a local array in every activation: each must see its own
__device__ __noinline__ int depot(int n, const int *g)
{
    int a[8];
    for (int i = 0; i < 8; i++) a[i] = g[(n + i) & 7] * (n + 1);
    if (n <= 0) return a[3];
    int r = depot(n - 1, g);
    return r + a[n & 7] - a[(n + 5) & 7];
}

// a pointer to the caller's frame passed down: the callee writes into its caller's array
__device__ __noinline__ void fill(int *dst, int n)
{
    int mine[4];
    for (int i = 0; i < 4; i++) mine[i] = n * 10 + i;
    if (n > 0) fill(mine, n - 1);
    for (int i = 0; i < 4; i++) dst[i] += mine[i];
}

// unbounded (for a tenant's runaway recursion); volatile keeps nvcc from looping it
__device__ __noinline__ int forever(volatile int *p, int n)
{
    if (*p == 12345) return n;
    return forever(p, n + 1) + 1;
}

extern "C" __global__ void fib_kernel(int *out, const int *n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = fib(n[t]);
}

extern "C" __global__ void parity_kernel(int *out, const int *n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = is_even(n[t]) ? 1 : (is_odd(n[t]) ? 2 : 3);
}

extern "C" __global__ void depot_kernel(int *out, const int *n, const int *g)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a = depot(n[t], g);
    int b = 0;
    if (t & 1) b = depot(n[t] / 2, g);    // a second call site, divergent
    out[t] = a * 3 + b;
}

extern "C" __global__ void fill_kernel(int *out, const int *n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int acc[4] = {0, 0, 0, 0};
    fill(acc, n[t]);
    for (int i = 0; i < 4; i++) out[4 * t + i] = acc[i];
}

extern "C" __global__ void forever_kernel(int *out, int *p)
{
    out[threadIdx.x] = forever(p, 0);
}

// the same values by a loop (scripts/bench/recursion.py compares the engines' rates)
extern "C" __global__ void fib_loop_kernel(int *out, const int *n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a = 0, b = 1;
    for (int k = 0; k < n[t]; k++) { int c = a + b; a = b; b = c; }
    out[t] = a;
}
