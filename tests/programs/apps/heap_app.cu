// Device malloc/free and new/delete as applications use them: the heap's limit read and
// grown before first use (and refused after), a struct array per thread with new[]/delete[],
// a linked list per block built by one launch and walked and freed by the next, and malloc
// returning NULL once the heap is exhausted.  Prints "<part> ok" per part; exits 1 on a
// mismatch.
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

struct Item {
    int key;
    float weight;
};

struct Node {
    int value;
    Node *next;
};

__global__ void items(float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    Item *a = new Item[n];
    if (!a) {
        out[t] = -1.0f;
        return;
    }
    for (int k = 0; k < n; k++)
        a[k] = Item{t + k, 0.5f * k};
    float s = 0;
    for (int k = 0; k < n; k++)
        s += a[k].key * a[k].weight;
    out[t] = s;
    delete[] a;
}

// every thread allocates a node; thread 0 links the block's nodes in thread order
__global__ void build(Node **heads)
{
    __shared__ Node *nodes[128];
    Node *node = (Node *)malloc(sizeof(Node));
    if (node) {
        node->value = blockIdx.x * 1000 + threadIdx.x;
        node->next = nullptr;
    }
    nodes[threadIdx.x] = node;
    __syncthreads();
    if (threadIdx.x == 0) {
        Node *head = nullptr;
        for (int i = blockDim.x - 1; i >= 0; i--)
            if (nodes[i]) {
                nodes[i]->next = head;
                head = nodes[i];
            }
        heads[blockIdx.x] = head;
    }
}

__global__ void walk_and_free(Node **heads, long long *sums, int *counts)
{
    if (threadIdx.x)
        return;
    long long s = 0;
    int c = 0;
    for (Node *p = heads[blockIdx.x]; p;) {
        Node *next = p->next;
        s += p->value;
        c++;
        free(p);
        p = next;
    }
    sums[blockIdx.x] = s;
    counts[blockIdx.x] = c;
}

__global__ void grab(void **ptrs, size_t size)
{
    ptrs[threadIdx.x] = malloc(size);
}

__global__ void release(void **ptrs)
{
    free(ptrs[threadIdx.x]);
}

static int limits(size_t want)
{
    size_t v = 0;
    CK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    printf("default heap %zu\n", v);
    CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, want));
    CK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    if (v != want) {
        printf("heap limit %zu, wanted %zu\n", v, want);
        return 1;
    }
    printf("limit ok\n");
    return 0;
}

static int run_items(void)
{
    const int threads = 256, n = 12;
    float *d, h[threads];
    CK(cudaMalloc(&d, sizeof h));
    items<<<threads / 64, 64>>>(d, n);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < threads; t++) {
        float s = 0;
        for (int k = 0; k < n; k++)
            s += (t + k) * (0.5f * k);
        if (h[t] != s) {
            printf("items[%d] = %f, want %f\n", t, h[t], s);
            return 1;
        }
    }
    CK(cudaFree(d));
    printf("items ok\n");
    return 0;
}

static int run_list(void)
{
    const int blocks = 6, threads = 128;
    Node **heads;
    long long *sums, hs[blocks];
    int *counts, hc[blocks];
    CK(cudaMalloc(&heads, blocks * sizeof(Node *)));
    CK(cudaMalloc(&sums, sizeof hs));
    CK(cudaMalloc(&counts, sizeof hc));
    build<<<blocks, threads>>>(heads);
    CK(cudaDeviceSynchronize());
    walk_and_free<<<blocks, threads>>>(heads, sums, counts);
    CK(cudaMemcpy(hs, sums, sizeof hs, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hc, counts, sizeof hc, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++) {
        long long want = 1000LL * b * threads + threads * (threads - 1) / 2;
        if (hc[b] != threads || hs[b] != want) {
            printf("list %d: %d nodes, sum %lld (want %lld)\n", b, hc[b], hs[b], want);
            return 1;
        }
    }
    printf("list ok\n");
    return 0;
}

static int run_exhaust(size_t heap)
{
    const int threads = 64;
    const size_t size = 1 << 20;
    void **d, *h[threads];
    CK(cudaMalloc(&d, sizeof h));
    grab<<<1, threads>>>(d, size);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int got = 0;
    for (int t = 0; t < threads; t++)
        got += h[t] != nullptr;
    release<<<1, threads>>>(d);
    CK(cudaDeviceSynchronize());
    if (got != (int)(heap / size)) {
        printf("%d of %d mallocs of 1 MiB succeeded in a heap of %zu\n", got, threads, heap);
        return 1;
    }
    printf("exhaust ok\n");
    return 0;
}

int main(void)
{
    const size_t heap = 16 << 20;
    if (limits(heap) || run_items() || run_list() || run_exhaust(heap))
        return 1;
    cudaError_t e = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 32 << 20);
    size_t v = 0;
    CK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    if (e != cudaErrorInvalidValue || v != heap) {
        printf("limit after use: %s, %zu\n", cudaGetErrorString(e), v);
        return 1;
    }
    printf("fixed ok\n");
    return 0;
}
