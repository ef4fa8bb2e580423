// Explicit CUDA graphs (libcudart's graph*.c): a diamond DAG of copy, memset, kernel,
// child-graph, host and event-record nodes built by hand, queried, launched in a loop, and
// changed after instantiation (per-node parameters and cudaGraphExecUpdate); the structural
// errors CUDA documents (a cycle at instantiation, duplicate and missing edges, foreign
// nodes, a changed topology at update).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "rt_check.h"
#include "rt_graph_kernels.h"

static const int N = 1000;
static int host_in[N], host_out[N], host_out2[N];

struct tally {
    int calls;
    long long sum;
};

static void CUDART_CB check_sum(void *arg) // a host node: runs after the copy back
{
    tally *t = (tally *)arg;
    t->calls++;
    t->sum = 0;
    for (int i = 0; i < N; i++)
        t->sum += host_out[i];
}

static cudaKernelNodeParams axpb_params(void **args)
{
    cudaKernelNodeParams p = {};
    p.func = (void *)axpb;
    p.gridDim = dim3((N + 127) / 128);
    p.blockDim = dim3(128);
    p.kernelParams = args;
    return p;
}

static long long sum_of(const int *v)
{
    long long s = 0;
    for (int i = 0; i < N; i++)
        s += v[i];
    return s;
}

int main()
{
    int *a, *b, *c;
    for (int i = 0; i < N; i++)
        host_in[i] = i;
    CK(cudaMalloc(&a, N * sizeof(int)));
    CK(cudaMalloc(&b, N * sizeof(int)));
    CK(cudaMalloc(&c, N * sizeof(int)));
    cudaStream_t s;
    cudaEvent_t done;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&done));

    // The child: b = b * 2 (then an empty node).
    cudaGraph_t child, g;
    cudaGraphNode_t ck, ce;
    int n = N, two = 2, zero = 0;
    void *child_args[] = {&b, &two, &zero, &n};
    cudaKernelNodeParams cp = axpb_params(child_args);
    CK(cudaGraphCreate(&child, 0));
    CK(cudaGraphAddKernelNode(&ck, child, NULL, 0, &cp));
    CK(cudaGraphAddEmptyNode(&ce, child, &ck, 1));

    // The diamond: copy in -> a = 3a+1;  b = 7 -> child;  then c = a + b, copy out, host.
    cudaGraphNode_t in, set, k1, sub, join, out, host, rec;
    CK(cudaGraphCreate(&g, 0));
    cudaMemcpy3DParms cpy = {};
    cpy.srcPtr = make_cudaPitchedPtr(host_in, N * sizeof(int), N * sizeof(int), 1);
    cpy.dstPtr = make_cudaPitchedPtr(a, N * sizeof(int), N * sizeof(int), 1);
    cpy.extent = make_cudaExtent(N * sizeof(int), 1, 1);
    cpy.kind = cudaMemcpyHostToDevice;
    CK(cudaGraphAddMemcpyNode(&in, g, NULL, 0, &cpy));
    cudaMemsetParams ms = {};
    ms.dst = b;
    ms.value = 7;
    ms.elementSize = 4;
    ms.width = N;
    ms.height = 1;
    CK(cudaGraphAddMemsetNode(&set, g, NULL, 0, &ms));
    int three = 3, one = 1;
    void *args[] = {&a, &three, &one, &n};
    cudaKernelNodeParams kp = axpb_params(args);
    CK(cudaGraphAddKernelNode(&k1, g, &in, 1, &kp));
    three = 100; // the node copied its arguments when added
    CK(cudaGraphAddChildGraphNode(&sub, g, &set, 1, child));
    CK(cudaGraphDestroy(child)); // the node holds its own clone
    void *add_args[] = {&a, &b, &c, &n};
    cudaKernelNodeParams ap = {};
    ap.func = (void *)addv;
    ap.gridDim = dim3((N + 255) / 256);
    ap.blockDim = dim3(256);
    ap.kernelParams = add_args;
    CK(cudaGraphAddKernelNode(&join, g, NULL, 0, &ap));
    cudaGraphNode_t from[] = {k1, sub}, to[] = {join, join};
    CK(cudaGraphAddDependencies(g, from, to, NULL, 2));
    CK(cudaGraphAddMemcpyNode1D(&out, g, &join, 1, host_out, c, N * sizeof(int),
                                cudaMemcpyDeviceToHost));
    tally t = {0, 0};
    cudaHostNodeParams hp = {check_sum, &t};
    CK(cudaGraphAddHostNode(&host, g, &out, 1, &hp));
    CK(cudaGraphAddEventRecordNode(&rec, g, &out, 1, done));

    size_t nodes = 0, roots = 0, edges = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    CK(cudaGraphGetRootNodes(g, NULL, &roots));
    CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &edges));
    cudaGraphNode_t rv[4] = {k1, k1, k1, k1};
    size_t two_roots = 4; // room for four: the two past the roots come back NULL
    CK(cudaGraphGetRootNodes(g, rv, &two_roots));
    enum cudaGraphNodeType types[4];
    cudaGraphNodeGetType(in, &types[0]);
    cudaGraphNodeGetType(sub, &types[1]);
    cudaGraphNodeGetType(host, &types[2]);
    cudaGraphNodeGetType(rec, &types[3]);
    cudaKernelNodeParams got;
    CK(cudaGraphKernelNodeGetParams(k1, &got));
    printf("dag nodes=%zu roots=%zu edges=%zu root0=%d root1=%d rest=%zu,%d types=%d,%d,%d,%d "
           "a=%d func=%d\n", nodes, roots, edges, rv[0] == in, rv[1] == set, two_roots,
           rv[2] == NULL && rv[3] == NULL, types[0], types[1],
           types[2], types[3], *(int *)got.kernelParams[1], got.func == (void *)axpb);

    char dot[] = "/tmp/rt_graph_dag_XXXXXX";
    close(mkstemp(dot));
    CK(cudaGraphDebugDotPrint(g, dot, cudaGraphDebugDotFlagsVerbose));
    int arrows = 0, clusters = 0;
    char line[512];
    FILE *f = fopen(dot, "r");
    while (f && fgets(line, sizeof line, f)) {
        arrows += strstr(line, "->") != NULL;
        clusters += strstr(line, "subgraph cluster_") != NULL;
    }
    if (f)
        fclose(f);
    unlink(dot);
    printf("dot arrows=%d clusters=%d\n", arrows, clusters);

    cudaGraphExec_t x;
    CK(cudaGraphInstantiate(&x, g, 0));
    long long sums[3];
    for (int k = 0; k < 3; k++) { // relaunched: each run starts from the copy in
        CK(cudaGraphLaunch(x, s));
        CK(cudaStreamSynchronize(s));
        sums[k] = t.sum;
    }
    cudaError_t q = cudaEventQuery(done);

    // Per-node changes of the executable graph (the graph itself keeps its parameters).
    int five = 5;
    void *args5[] = {&a, &five, &one, &n};
    cudaKernelNodeParams kp5 = axpb_params(args5);
    CK(cudaGraphExecKernelNodeSetParams(x, k1, &kp5));
    CK(cudaGraphExecMemcpyNodeSetParams1D(x, out, host_out2, c, N * sizeof(int),
                                          cudaMemcpyDeviceToHost));
    CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphKernelNodeGetParams(k1, &got));
    printf("run sums=%lld,%lld,%lld calls=%d event=%s exec5=%lld kept=%lld node_a=%d\n",
           sums[0], sums[1], sums[2], t.calls, cudaGetErrorName(q), sum_of(host_out2),
           t.sum, *(int *)got.kernelParams[1]);

    // cudaGraphExecUpdate from a clone with a = 7; then from one of another topology.
    cudaGraph_t g2;
    cudaGraphNode_t k1c, extra;
    CK(cudaGraphClone(&g2, g));
    CK(cudaGraphNodeFindInClone(&k1c, k1, g2));
    int seven = 7;
    void *args7[] = {&a, &seven, &one, &n};
    cudaKernelNodeParams kp7 = axpb_params(args7);
    CK(cudaGraphKernelNodeSetParams(k1c, &kp7));
    cudaGraphExecUpdateResultInfo info;
    cudaError_t up = cudaGraphExecUpdate(x, g2, &info);
    int up_result = info.result;
    CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    long long upd = t.sum; // the update brought back the original copy-out node's target
    CK(cudaGraphAddEmptyNode(&extra, g2, &k1c, 1));
    cudaError_t topo = cudaGraphExecUpdate(x, g2, &info);
    printf("update=%s,%d sum=%lld topo=%s,%d\n", cudaGetErrorName(up), up_result, upd,
           cudaGetErrorName(topo), (int)info.result);
    cudaGetLastError();

    // Structural errors.
    cudaGraph_t cyc;
    cudaGraphNode_t e1, e2, e3;
    cudaGraphExec_t bad = NULL;
    CK(cudaGraphCreate(&cyc, 0));
    CK(cudaGraphAddEmptyNode(&e1, cyc, NULL, 0));
    CK(cudaGraphAddEmptyNode(&e2, cyc, &e1, 1));
    CK(cudaGraphAddEmptyNode(&e3, cyc, &e2, 1));
    cudaError_t dup = cudaGraphAddDependencies(cyc, &e1, &e2, NULL, 1);
    cudaError_t self = cudaGraphAddDependencies(cyc, &e1, &e1, NULL, 1);
    cudaError_t foreign = cudaGraphAddEmptyNode(&e1, cyc, &k1, 1);
    CK(cudaGraphAddDependencies(cyc, &e3, &e1, NULL, 1)); // e1 -> e2 -> e3 -> e1
    cudaError_t cycle = cudaGraphInstantiate(&bad, cyc, 0);
    cudaError_t missing = cudaGraphRemoveDependencies(cyc, &e1, &e3, NULL, 1);
    CK(cudaGraphRemoveDependencies(cyc, &e3, &e1, NULL, 1));
    CK(cudaGraphDestroyNode(e2));
    size_t left = 0, left_edges = 0;
    CK(cudaGraphGetNodes(cyc, NULL, &left));
    CK(cudaGraphGetEdges(cyc, NULL, NULL, NULL, &left_edges));
    cudaGraphExec_t on_device = NULL;
    cudaError_t device_launch = cudaGraphInstantiate(&on_device, cyc,
                                                     cudaGraphInstantiateFlagDeviceLaunch);
    cudaError_t acyclic = cudaGraphInstantiate(&bad, cyc, 0);
    cudaError_t wrong = cudaGraphKernelNodeGetParams(e1, &got);
    cudaGetLastError();
    printf("errors dup=%s self=%s foreign=%s cycle=%s missing=%s left=%zu,%zu acyclic=%s "
           "wrong=%s device_launch=%s\n", cudaGetErrorName(dup), cudaGetErrorName(self),
           cudaGetErrorName(foreign), cudaGetErrorName(cycle), cudaGetErrorName(missing), left,
           left_edges, cudaGetErrorName(acyclic), cudaGetErrorName(wrong),
           cudaGetErrorName(device_launch));

    CK(cudaGraphExecDestroy(bad));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(cyc));
    CK(cudaGraphDestroy(g2));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(done));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    return 0;
}
