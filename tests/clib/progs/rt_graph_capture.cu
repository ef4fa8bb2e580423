// Stream capture into a graph's DAG across streams (libcudart's capture*.c), as CUDA's
// samples fork and join: an event recorded in the capturing stream and waited on by a second
// stream pulls that stream into the capture; the origin waits on the second stream's event to
// join it.  Then the errors CUDA documents: a fork never joined, ending the capture from the
// joined stream, and a graph launched inside a capture becoming one child-graph node.
#include <cstdio>

#include "rt_check.h"
#include "rt_graph_kernels.h"

static const int N = 4096;
__device__ int dev_var[4];
static int host_in[N], host_out[N];
static long long last_sum;
static int calls;

static void CUDART_CB summarize(void *) // captured by cudaLaunchHostFunc: a host node
{
    calls++;
    last_sum = 0;
    for (int i = 0; i < N; i++)
        last_sum += host_out[i];
}

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

// 2D and symbol copies and a 2D memset captured: nodes that run at each launch, reading the
// host's memory then (nothing runs during the capture).
static int flat_copies(cudaStream_t s)
{
    static unsigned char grid_out[4][16];
    static int to_var[4] = {1, 2, 3, 4}, from_var[4];
    unsigned char *pitched;
    size_t pitch;
    cudaGraph_t g;
    cudaGraphExec_t x;
    CK(cudaMallocPitch((void **)&pitched, &pitch, 16, 4));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemset2DAsync(pitched, pitch, 7, 16, 4, s));
    CK(cudaMemcpyToSymbolAsync(dev_var, to_var, sizeof to_var, 0, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpy2DAsync(grid_out, 16, pitched, pitch, 16, 4, cudaMemcpyDeviceToHost, s));
    CK(cudaMemcpyFromSymbolAsync(from_var, dev_var, sizeof from_var, 0, cudaMemcpyDeviceToHost,
                                 s));
    CK(cudaStreamEndCapture(s, &g));
    int early = grid_out[3][15] + from_var[3];
    to_var[3] = 40; // read when the graph runs
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    int bytes = 0;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 16; c++)
            bytes += grid_out[r][c];
    printf("flat nodes=%zu early=%d bytes=%d var=%d,%d,%d,%d\n", nodes, early, bytes,
           from_var[0], from_var[1], from_var[2], from_var[3]);
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(pitched));
    return 0;
}

// The fork/join of main() again with x = a*i (the same calls, so the same topology).
static cudaGraph_t recapture(cudaStream_t s1, cudaStream_t s2, cudaEvent_t fork,
                             cudaEvent_t joined, int *x, int *y, int *z, int a)
{
    cudaGraph_t g = NULL;
    dim3 grid(N / 256), block(256);
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    cudaEventRecord(fork, s1);
    cudaStreamWaitEvent(s2, fork, 0);
    cudaMemcpyAsync(x, host_in, N * sizeof(int), cudaMemcpyHostToDevice, s1);
    axpb<<<grid, block, 0, s1>>>(x, a, 0, N);
    cudaMemsetAsync(y, 0, N * sizeof(int), s2);
    axpb<<<grid, block, 0, s2>>>(y, 1, 5, N);
    cudaEventRecord(joined, s2);
    cudaStreamWaitEvent(s1, joined, 0);
    addv<<<grid, block, 0, s1>>>(x, y, z, N);
    cudaMemcpyAsync(host_out, z, N * sizeof(int), cudaMemcpyDeviceToHost, s1);
    cudaLaunchHostFunc(s1, summarize, NULL);
    cudaStreamEndCapture(s1, &g);
    return g;
}

int main()
{
    int *x, *y, *z;
    const size_t bytes = N * sizeof(int);
    for (int i = 0; i < N; i++)
        host_in[i] = i;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    CK(cudaMalloc(&z, bytes));
    cudaStream_t s1, s2, s3;
    cudaEvent_t fork, joined;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
    CK(cudaEventCreate(&fork));
    CK(cudaEventCreate(&joined));
    dim3 grid(N / 256), block(256);

    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));                  // s2 joins the capture
    CK(cudaMemcpyAsync(x, host_in, bytes, cudaMemcpyHostToDevice, s1));
    axpb<<<grid, block, 0, s1>>>(x, 2, 0, N);              // x = 2i
    CK(cudaMemsetAsync(y, 0, bytes, s2));
    axpb<<<grid, block, 0, s2>>>(y, 1, 5, N);              // y = 5
    cudaStreamCaptureStatus st2;
    unsigned long long id1 = 0, id2 = 0;
    cudaGraph_t being = NULL;
    const cudaGraphNode_t *front = NULL;
    size_t nfront = 0;
    CK(cudaStreamGetCaptureInfo(s1, &st2, &id1));
    CK(cudaStreamGetCaptureInfo(s2, &st2, &id2, &being, &front, NULL, &nfront));
    cudaGraphNodeType front_type;
    CK(cudaGraphNodeGetType(front[0], &front_type));
    CK(cudaEventRecord(joined, s2));
    CK(cudaStreamWaitEvent(s1, joined, 0));                // join s2 back
    addv<<<grid, block, 0, s1>>>(x, y, z, N);              // z = 2i + 5
    CK(cudaMemcpyAsync(host_out, z, bytes, cudaMemcpyDeviceToHost, s1));
    CK(cudaLaunchHostFunc(s1, summarize, NULL));
    cudaGraph_t g;
    CK(cudaStreamEndCapture(s1, &g));
    cudaStreamCaptureStatus after;
    CK(cudaStreamIsCapturing(s2, &after));                 // the end ended it for s2 too

    size_t nodes = 0, roots = 0, edges = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    CK(cudaGraphGetRootNodes(g, NULL, &roots));
    CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &edges));
    printf("capture same_id=%d graph=%d front=%zu,%d after=%d nodes=%zu roots=%zu edges=%zu "
           "ran=%d\n", id1 == id2 && id1 != 0, being == g, nfront, (int)front_type, (int)after,
           nodes, roots, edges, calls);

    cudaGraphExec_t ex;
    CK(cudaGraphInstantiate(&ex, g, 0));
    long long sums[3];
    for (int k = 0; k < 3; k++) {
        CK(cudaGraphLaunch(ex, s3));                       // on any stream
        CK(cudaStreamSynchronize(s3));
        sums[k] = last_sum;
    }
    printf("launch sums=%lld,%lld,%lld calls=%d\n", sums[0], sums[1], sums[2], calls);

    // jacobiCudaGraphs' two ways to change an instantiated graph: one kernel node, found by
    // type and function among the captured nodes, set on the executable graph (z = x + x) ...
    cudaGraphNode_t all[7], add_node = NULL;
    size_t count = 7;
    CK(cudaGraphGetNodes(g, all, &count));
    cudaKernelNodeParams kp;
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(all[i], &t));
        if (t == cudaGraphNodeTypeKernel && cudaGraphKernelNodeGetParams(all[i], &kp) == 0
            && kp.func == (void *)addv)
            add_node = all[i];
    }
    CK(cudaGraphKernelNodeGetParams(add_node, &kp));
    int n = N;
    void *twice_x[] = {&x, &x, &z, &n};
    kp.kernelParams = twice_x;
    CK(cudaGraphExecKernelNodeSetParams(ex, add_node, &kp));
    CK(cudaGraphLaunch(ex, s3));
    CK(cudaStreamSynchronize(s3));
    long long set_sum = last_sum;
    // ... and cudaGraphExecUpdate from a new capture of the same calls with x = 3i.
    cudaGraph_t g3 = recapture(s1, s2, fork, joined, x, y, z, 3);
    cudaGraphExecUpdateResultInfo info;
    cudaError_t up = cudaGraphExecUpdate(ex, g3, &info);
    CK(cudaGraphLaunch(ex, s3));
    CK(cudaStreamSynchronize(s3));
    printf("update set=%lld exec_update=%s,%d sum=%lld\n", set_sum, name(up), (int)info.result,
           last_sum);
    CK(cudaGraphDestroy(g3));

    // A fork that never joins: the capture cannot end; both streams stop capturing.
    cudaGraph_t bad = (cudaGraph_t)1;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    axpb<<<grid, block, 0, s2>>>(y, 1, 1, N);
    cudaError_t unjoined = cudaStreamEndCapture(s1, &bad);
    cudaStreamCaptureStatus s2_after;
    CK(cudaStreamIsCapturing(s2, &s2_after));
    // Ending from the stream that joined is refused (and invalidates the capture).
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    cudaGraph_t other;
    cudaError_t unmatched = cudaStreamEndCapture(s2, &other);
    cudaError_t invalidated = cudaStreamEndCapture(s1, &other);
    cudaError_t twice = cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    cudaError_t again = cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    cudaGraph_t nested;
    // A graph launched in a capture: one child-graph node.
    CK(cudaGraphLaunch(ex, s1));
    CK(cudaStreamEndCapture(s1, &nested));
    size_t nested_nodes = 0;
    cudaGraphNode_t only;
    cudaGraphNodeType only_type;
    CK(cudaGraphGetNodes(nested, NULL, &nested_nodes));
    nested_nodes = 1;
    CK(cudaGraphGetNodes(nested, &only, &nested_nodes));
    CK(cudaGraphNodeGetType(only, &only_type));
    cudaGetLastError();
    printf("errors unjoined=%s,%d s2=%d unmatched=%s invalidated=%s begin=%s,%s nested=%zu,%d "
           "calls=%d\n", name(unjoined), bad == NULL, (int)s2_after, name(unmatched),
           name(invalidated), name(twice), name(again), nested_nodes, (int)only_type, calls);

    if (flat_copies(s1))
        return 1;
    CK(cudaGraphDestroy(nested));
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(fork));
    CK(cudaEventDestroy(joined));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaStreamDestroy(s3));
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaFree(z));
    return 0;
}
