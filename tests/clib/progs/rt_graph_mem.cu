// Graph memory nodes (libcudart's graph_mem.c), as CUDA's graphMemoryNodes sample uses them:
// cudaMallocAsync and cudaFreeAsync captured as allocation and free nodes, and the same built
// by hand; the allocation keeps its address across launches, the device's graph-memory
// counters follow the graphs' lives, and the documented errors.
#include <cstdio>

#include "rt_check.h"
#include "rt_graph_kernels.h"

static const int N = 2048;
static int host_out[N];

static long long sum_out()
{
    long long s = 0;
    for (int i = 0; i < N; i++)
        s += host_out[i];
    return s;
}

static unsigned long long graph_mem(cudaGraphMemAttributeType a)
{
    unsigned long long v = 0;
    cudaDeviceGetGraphMemAttribute(0, a, &v);
    return v;
}

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

int main()
{
    const size_t bytes = N * sizeof(int);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    dim3 grid(N / 256), block(256);

    // Captured: d = cudaMallocAsync; d = 0; d = 2d + 9; copy out; cudaFreeAsync(d).
    int *d = NULL;
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMallocAsync(&d, bytes, s));
    CK(cudaMemsetAsync(d, 0, bytes, s));
    axpb<<<grid, block, 0, s>>>(d, 2, 9, N);
    CK(cudaMemcpyAsync(host_out, d, bytes, cudaMemcpyDeviceToHost, s));
    CK(cudaFreeAsync(d, s));
    CK(cudaStreamEndCapture(s, &g));
    size_t count = 5;
    cudaGraphNode_t nodes[5];
    cudaGraphNodeType first, last;
    CK(cudaGraphGetNodes(g, nodes, &count));
    CK(cudaGraphNodeGetType(nodes[0], &first));
    CK(cudaGraphNodeGetType(nodes[count - 1], &last));
    cudaMemAllocNodeParams ap;
    void *freed = NULL;
    CK(cudaGraphMemAllocNodeGetParams(nodes[0], &ap));
    CK(cudaGraphMemFreeNodeGetParams(nodes[count - 1], &freed));
    unsigned long long used = graph_mem(cudaGraphMemAttrUsedMemCurrent);
    cudaGraphExec_t x;
    CK(cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    CK(cudaGraphDestroy(g)); // the executable graph keeps the allocation
    long long sums[3];
    for (int k = 0; k < 3; k++) {
        CK(cudaGraphLaunch(x, s));
        CK(cudaStreamSynchronize(s));
        sums[k] = sum_out();
    }
    CK(cudaGraphExecDestroy(x));
    unsigned long long after = graph_mem(cudaGraphMemAttrUsedMemCurrent);
    unsigned long long high = graph_mem(cudaGraphMemAttrUsedMemHigh);
    printf("captured nodes=%zu types=%d,%d same_ptr=%d,%d size=%zu used=%llu sums=%lld,%lld,"
           "%lld after=%llu high=%llu\n", count, (int)first, (int)last, ap.dptr == d,
           freed == d, ap.bytesize, used, sums[0], sums[1], sums[2], after, high);

    // By hand: an allocation the graph does not free; its address outlives each launch, and
    // freeing it outside hands it back to the graph, which still owns it for the next launch.
    cudaGraph_t h;
    cudaGraphNode_t alloc, kern, copy;
    CK(cudaGraphCreate(&h, 0));
    cudaMemAllocNodeParams p = {};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    CK(cudaGraphAddMemAllocNode(&alloc, h, NULL, 0, &p));
    int *e = (int *)p.dptr, n = N, one = 1, zero = 0;
    void *args[] = {&e, &zero, &one, &n}; // e = 1
    cudaKernelNodeParams kp = {};
    kp.func = (void *)axpb;
    kp.gridDim = grid;
    kp.blockDim = block;
    kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&kern, h, &alloc, 1, &kp));
    CK(cudaGraphAddMemcpyNode1D(&copy, h, &kern, 1, host_out, e, bytes,
                                cudaMemcpyDeviceToHost));
    cudaGraphExec_t y;
    CK(cudaGraphInstantiate(&y, h, 0));
    CK(cudaGraphLaunch(y, s));
    CK(cudaStreamSynchronize(s));
    long long first_sum = sum_out();
    CK(cudaFree(e)); // back to the graph
    CK(cudaGraphLaunch(y, s));
    CK(cudaStreamSynchronize(s));
    long long again = sum_out();
    int *plain;
    CK(cudaMalloc(&plain, 64));
    cudaGraphNode_t bad_free;
    cudaError_t not_graph = cudaGraphAddMemFreeNode(&bad_free, h, &copy, 1, plain);
    p.bytesize = 0;
    cudaError_t empty = cudaGraphAddMemAllocNode(&bad_free, h, NULL, 0, &p);
    CK(cudaGraphExecDestroy(y));
    CK(cudaGraphDestroy(h));
    CK(cudaFree(plain));
    unsigned long long zero64 = 0;
    CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero64));
    CK(cudaDeviceGraphMemTrim(0));
    cudaGetLastError();
    printf("explicit sums=%lld,%lld not_graph=%s empty=%s left=%llu high=%llu\n", first_sum,
           again, name(not_graph), name(empty), graph_mem(cudaGraphMemAttrUsedMemCurrent),
           graph_mem(cudaGraphMemAttrUsedMemHigh));
    CK(cudaStreamDestroy(s));
    return 0;
}
