// Recursive __device__ functions, as in tree traversals and recursive sorts, run unchanged
// on gdev-py (tests/programs/test_recursion_app.py): the interpreter gives them real calls
// with per-thread stacks; each part checks its results against the host.
#include <cstdio>
#include <cstdlib>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__host__ __device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__global__ void fib_kernel(const int *n, int *out, int count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < count) out[t] = fib(n[t]);
}

// a binary tree in arrays: node k has children left[k], right[k] (-1: none)
__host__ __device__ long long tree_sum(const int *val, const int *left, const int *right,
                                       int node, int depth)
{
    if (node < 0) return 0;
    long long l = tree_sum(val, left, right, left[node], depth + 1);
    long long r = tree_sum(val, left, right, right[node], depth + 1);
    return val[node] * (long long)depth + l * 3 - r;
}

__global__ void tree_kernel(const int *val, const int *left, const int *right,
                            const int *roots, long long *out, int count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < count) out[t] = tree_sum(val, left, right, roots[t], 1);
}

#define LEN 24

__host__ __device__ void quicksort(int *a, int lo, int hi)
{
    if (lo >= hi) return;
    int p = a[(lo + hi) / 2], i = lo, j = hi;
    while (i <= j) {
        while (a[i] < p) i++;
        while (a[j] > p) j--;
        if (i <= j) { int x = a[i]; a[i] = a[j]; a[j] = x; i++; j--; }
    }
    quicksort(a, lo, j);
    quicksort(a, i, hi);
}

__global__ void sort_kernel(const int *in, int *out, int count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    int a[LEN];
    for (int k = 0; k < LEN; k++) a[k] = in[t * LEN + k];
    quicksort(a, 0, LEN - 1 - t % 5);      // threads sort different lengths
    for (int k = 0; k < LEN; k++) out[t * LEN + k] = a[k];
}

template <typename T>
static T *to_device(const T *h, int n)
{
    T *d;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

static bool check_fib(void)
{
    const int count = 200;
    int n[count], got[count], *dn = 0, *dout = 0;
    for (int t = 0; t < count; t++) n[t] = (t * 7) % 19;
    dn = to_device(n, count);
    CHECK(cudaMalloc(&dout, sizeof got));
    fib_kernel<<<(count + 63) / 64, 64>>>(dn, dout, count);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
    for (int t = 0; t < count; t++)
        if (got[t] != fib(n[t])) { printf("fib(%d) = %d\n", n[t], got[t]); return false; }
    return true;
}

static bool check_tree(void)
{
    const int nodes = 300, count = 96;
    int val[nodes], left[nodes], right[nodes], roots[count];
    long long got[count];
    srand(12);
    for (int k = 0; k < nodes; k++) {       // a random tree: children have larger indices
        val[k] = rand() % 100 - 50;
        int l = 2 * k + 1 + rand() % 3, r = 2 * k + 2 + rand() % 5;
        left[k] = l < nodes && rand() % 8 ? l : -1;
        right[k] = r < nodes && rand() % 6 ? r : -1;
    }
    for (int t = 0; t < count; t++) roots[t] = (t * 37) % nodes;
    int *dv = to_device(val, nodes), *dl = to_device(left, nodes), *dr = to_device(right, nodes);
    int *droots = to_device(roots, count);
    long long *dout;
    CHECK(cudaMalloc(&dout, sizeof got));
    tree_kernel<<<3, 32>>>(dv, dl, dr, droots, dout, count);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
    for (int t = 0; t < count; t++)
        if (got[t] != tree_sum(val, left, right, roots[t], 1)) {
            printf("tree %d: %lld\n", t, got[t]);
            return false;
        }
    return true;
}

static bool check_sort(void)
{
    const int count = 80;
    static int in[count * LEN], got[count * LEN];
    for (int k = 0; k < count * LEN; k++) in[k] = (int)((k * 2654435761u) % 1000) - 500;
    int *din = to_device(in, count * LEN), *dout;
    CHECK(cudaMalloc(&dout, sizeof got));
    sort_kernel<<<(count + 31) / 32, 32>>>(din, dout, count);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
    for (int t = 0; t < count; t++) {
        int *a = in + t * LEN;
        quicksort(a, 0, LEN - 1 - t % 5);
        for (int k = 0; k < LEN; k++)
            if (got[t * LEN + k] != a[k]) { printf("sort %d at %d\n", t, k); return false; }
    }
    return true;
}

int main(void)
{
    size_t stack = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    printf("stack %zu\n", stack);
    printf("fib %s\n", check_fib() ? "ok" : "FAILED");
    printf("tree %s\n", check_tree() ? "ok" : "FAILED");
    printf("sort %s\n", check_sort() ? "ok" : "FAILED");
    return 0;
}
