// CUDA 12's further graph calls, each checked by value: copy nodes to and from a __device__
// symbol (and their new parameters), user objects whose destructor runs when the last graph
// holding them goes, kernel-node launch attributes (kept across new parameters, copied, the
// cooperative one launching a grid-synchronizing kernel) and the generic
// cudaGraphNodeSetParams / cudaGraphExecNodeSetParams.
#include <cooperative_groups.h>
#include <cstdio>

#include "rt_check.h"
#include "rt_graph_kernels.h"

namespace cg = cooperative_groups;

__device__ int table[8];

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

// Every block adds its id, the grid syncs, block 0 reads the total: only cooperative works.
__global__ void grid_total(int *sum, int *seen)
{
    if (threadIdx.x == 0)
        atomicAdd(sum, blockIdx.x + 1);
    cg::this_grid().sync();
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *seen = *sum;
}

static int launch_once(cudaGraph_t g)
{
    cudaGraphExec_t x;
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, 0));
    CK(cudaStreamSynchronize(0));
    CK(cudaGraphExecDestroy(x));
    return 0;
}

static int symbols(void)
{
    int in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[4] = {0}, again[2] = {0};
    cudaGraph_t g;
    cudaGraphNode_t to, from;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddMemcpyNodeToSymbol(&to, g, NULL, 0, table, in, sizeof in, 0,
                                      cudaMemcpyHostToDevice));
    CK(cudaGraphAddMemcpyNodeFromSymbol(&from, g, &to, 1, out, table, sizeof out, 2 * sizeof(int),
                                        cudaMemcpyDeviceToHost));
    if (launch_once(g))
        return 1;
    CK(cudaGraphMemcpyNodeSetParamsFromSymbol(from, again, table, sizeof again, 6 * sizeof(int),
                                              cudaMemcpyDeviceToHost));
    if (launch_once(g))
        return 1;
    cudaGraphNode_t bad;
    cudaError_t past = cudaGraphAddMemcpyNodeToSymbol(&bad, g, NULL, 0, table, in, sizeof in,
                                                      4, cudaMemcpyHostToDevice);
    cudaError_t dir = cudaGraphAddMemcpyNodeToSymbol(&bad, g, NULL, 0, table, in, 4, 0,
                                                     cudaMemcpyDeviceToHost);
    cudaGetLastError();
    printf("symbols out=%d,%d,%d,%d again=%d,%d past=%s dir=%s\n", out[0], out[1], out[2],
           out[3], again[0], again[1], name(past), name(dir));
    CK(cudaGraphDestroy(g));
    return 0;
}

static int destroyed;
static void destroy(void *p) { destroyed += *(int *)p; }

static int user_objects(void)
{
    static int weight = 10;
    cudaUserObject_t o;
    cudaGraph_t g, clone;
    cudaGraphExec_t x;
    CK(cudaUserObjectCreate(&o, &weight, destroy, 1, cudaUserObjectNoDestructorSync));
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t e;
    CK(cudaGraphAddEmptyNode(&e, g, NULL, 0));
    CK(cudaGraphRetainUserObject(g, o, 2, 0));
    CK(cudaUserObjectRelease(o, 1)); // the program's own reference: the graph keeps it
    CK(cudaGraphClone(&clone, g));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphReleaseUserObject(g, o, 1));
    int after_release = destroyed;
    CK(cudaGraphDestroy(g));
    int after_graph = destroyed;
    CK(cudaGraphDestroy(clone));
    int after_clone = destroyed;
    CK(cudaGraphExecDestroy(x)); // the last holder
    cudaError_t over = cudaGraphReleaseUserObject(NULL, o, 1);
    cudaError_t flags = cudaUserObjectCreate(&o, &weight, destroy, 1, 0);
    cudaGetLastError();
    printf("userobj kept=%d,%d,%d gone=%d release_null=%s flags=%s\n", after_release,
           after_graph, after_clone, destroyed, name(over), name(flags));
    return 0;
}

static int attributes(int *d)
{
    cudaGraph_t g;
    cudaGraphNode_t k, k2;
    int *sum = d, *seen = d + 1, n = 1024, a = 2, b = 1;
    void *args[] = {&sum, &seen}, *aargs[] = {&d, &a, &b, &n};
    cudaKernelNodeParams p = {};
    p.func = (void *)grid_total;
    p.gridDim = dim3(8);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddKernelNode(&k, g, NULL, 0, &p));
    cudaLaunchAttributeValue v = {}, got = {}, unset = {}, copied = {};
    v.cooperative = 1;
    CK(cudaGraphKernelNodeSetAttribute(k, cudaLaunchAttributeCooperative, &v));
    v.priority = 3;
    CK(cudaGraphKernelNodeSetAttribute(k, cudaLaunchAttributePriority, &v));
    CK(cudaGraphKernelNodeSetParams(k, &p)); // new parameters keep the attributes
    CK(cudaGraphKernelNodeGetAttribute(k, cudaLaunchAttributePriority, &got));
    CK(cudaGraphKernelNodeGetAttribute(k, cudaLaunchAttributeAccessPolicyWindow, &unset));
    CK(cudaMemset(d, 0, 2 * sizeof(int)));
    if (launch_once(g))
        return 1;
    int h[2];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    cudaKernelNodeParams q = {};
    q.func = (void *)axpb;
    q.gridDim = dim3(1);
    q.blockDim = dim3(32);
    q.kernelParams = aargs;
    CK(cudaGraphAddKernelNode(&k2, g, &k, 1, &q));
    CK(cudaGraphKernelNodeCopyAttributes(k2, k));
    CK(cudaGraphKernelNodeGetAttribute(k2, cudaLaunchAttributePriority, &copied));
    cudaError_t not_kernel = cudaGraphKernelNodeGetAttribute(NULL, cudaLaunchAttributePriority, &got);
    cudaGetLastError();
    printf("attrs priority=%d unset=%d sum=%d seen=%d copied=%d not_kernel=%s\n", got.priority,
           (int)unset.accessPolicyWindow.num_bytes, h[0], h[1], copied.priority, name(not_kernel));
    CK(cudaGraphDestroy(g));
    return 0;
}

static int generic(int *d)
{
    cudaGraph_t g;
    cudaGraphNode_t m, k;
    cudaGraphExec_t x;
    int n = 8, a = 3, b = 4, h[8];
    void *args[] = {&d, &a, &b, &n};
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeMemset;
    p.memset.dst = d;
    p.memset.value = 1;
    p.memset.elementSize = 4;
    p.memset.width = 8;
    p.memset.height = 1;
    CK(cudaGraphAddNode(&m, g, NULL, NULL, 0, &p));
    cudaGraphNodeParams kp = {};
    kp.type = cudaGraphNodeTypeKernel;
    kp.kernel.func = (void *)axpb;
    kp.kernel.gridDim = dim3(1);
    kp.kernel.blockDim = dim3(8);
    kp.kernel.kernelParams = args;
    CK(cudaGraphAddNode(&k, g, &m, NULL, 1, &kp));
    p.memset.value = 2;
    CK(cudaGraphNodeSetParams(m, &p));             // 2*3+4 = 10
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, 0));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int first = h[7];
    a = 5;                                         // on the executable graph only: 2*5+4
    CK(cudaGraphExecNodeSetParams(x, k, &kp));
    CK(cudaGraphLaunch(x, 0));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    cudaError_t wrong = cudaGraphNodeSetParams(k, &p); // a memset's parameters for a kernel
    cudaGetLastError();
    printf("generic first=%d exec=%d wrong=%s\n", first, h[7], name(wrong));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    return 0;
}

// Capturing into the program's own graph needs no graph back (graphConditionalNodes' way);
// an ordinary capture does.
static int capture_to_graph(int *d)
{
    cudaGraph_t g, other;
    cudaStream_t s;
    size_t n = 0;
    int a = 2, b = 3, len = 8;
    void *args[] = {&d, &a, &b, &len};
    CK(cudaStreamCreate(&s));
    CK(cudaGraphCreate(&g, 0));
    CK(cudaStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, cudaStreamCaptureModeGlobal));
    CK(cudaLaunchKernel((void *)axpb, dim3(1), dim3(8), args, 0, s));
    CK(cudaStreamEndCapture(s, NULL));
    CK(cudaGraphGetNodes(g, NULL, &n));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaError_t null_out = cudaStreamEndCapture(s, NULL);
    cudaGetLastError();
    CK(cudaStreamEndCapture(s, &other));
    printf("capture_to_graph nodes=%zu null_out=%s\n", n, name(null_out));
    CK(cudaGraphDestroy(other));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    return 0;
}

int main(void)
{
    int *d;
    CK(cudaMalloc(&d, 1024 * sizeof(int)));
    if (symbols() || user_objects() || attributes(d) || generic(d) || capture_to_graph(d))
        return 1;
    CK(cudaFree(d));
    printf("rt_graph_more ok\n");
    return 0;
}
