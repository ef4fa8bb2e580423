// Conditional graph nodes (CUDA 12.4+: the graphConditionalNodes sample's shapes) built with
// cudaGraphAddNode and run unchanged on gdev-py (tests/programs/test_graphcond_app.py): a
// kernel decides IF/ELSE, WHILE and SWITCH nodes through cudaGraphSetConditional; a handle's
// default is applied at every launch; a handle of another graph is refused.  Each check
// prints "<name> ok".
#include <cstdio>
#include <cstdlib>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s failed: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void decide(cudaGraphConditionalHandle h, const int *v) { cudaGraphSetConditional(h, *v); }
__global__ void add(int *out, int k) { atomicAdd(out, k); }
__global__ void count_down(int *v, int *out, cudaGraphConditionalHandle h)
{
    atomicAdd(out, 1);
    int left = --*v;
    cudaGraphSetConditional(h, left > 0);
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, cudaGraphNode_t *dep, void *fn, void **args)
{
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = fn;
    p.kernel.gridDim = dim3(1);
    p.kernel.blockDim = dim3(1);
    p.kernel.kernelParams = args;
    cudaGraphNode_t n;
    CK(cudaGraphAddNode(&n, g, dep, NULL, dep ? 1 : 0, &p));
    return n;
}

static cudaGraph_t *conditional(cudaGraph_t g, cudaGraphNode_t dep,
                                cudaGraphConditionalHandle h,
                                cudaGraphConditionalNodeType type, unsigned size)
{
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    cudaGraphNode_t n;
    CK(cudaGraphAddNode(&n, g, &dep, NULL, 1, &p));
    return p.conditional.phGraph_out;
}

static int run(cudaGraph_t g, int *out)
{
    cudaGraphExec_t x;
    int got = 0;
    CK(cudaMemset(out, 0, sizeof got));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, 0));
    CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    CK(cudaGraphExecDestroy(x));
    return got;
}

// IF with an ELSE body: the value in *v picks one (then 10, else 20).
static bool if_else(int *v, int *out)
{
    bool ok = true;
    for (int value = 0; value < 2; value++) {
        cudaGraph_t g;
        cudaGraphConditionalHandle h;
        CK(cudaGraphCreate(&g, 0));
        CK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
        CK(cudaMemcpy(v, &value, sizeof value, cudaMemcpyHostToDevice));
        void *dargs[] = {&h, &v};
        cudaGraph_t *body = conditional(g, kernel_node(g, NULL, (void *)decide, dargs), h,
                                        cudaGraphCondTypeIf, 2);
        int then_k = 10, else_k = 20;
        void *targs[] = {&out, &then_k}, *eargs[] = {&out, &else_k};
        kernel_node(body[0], NULL, (void *)add, targs);
        kernel_node(body[1], NULL, (void *)add, eargs);
        ok &= run(g, out) == (value ? 10 : 20);
        CK(cudaGraphDestroy(g));
    }
    return ok;
}

// WHILE: the body counts down *v, so it runs *v times; the handle's default (1, applied at
// each launch) starts the loop without a kernel before the node.
static bool while_loop(int *v, int *out)
{
    cudaGraph_t g;
    cudaGraphConditionalHandle h;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    int start = 5;
    CK(cudaMemcpy(v, &start, sizeof start, cudaMemcpyHostToDevice));
    int zero = 0;
    void *zargs[] = {&out, &zero};
    cudaGraph_t *body = conditional(g, kernel_node(g, NULL, (void *)add, zargs), h,
                                    cudaGraphCondTypeWhile, 1);
    void *cargs[] = {&v, &out, &h};
    kernel_node(body[0], NULL, (void *)count_down, cargs);
    cudaGraphExec_t x;
    int first = 0, second = 0;
    CK(cudaMemset(out, 0, sizeof first));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, 0));
    CK(cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(v, &start, sizeof start, cudaMemcpyHostToDevice));
    CK(cudaGraphLaunch(x, 0));      // the handle ended at 0: the default must restart it
    CK(cudaMemcpy(&second, out, sizeof second, cudaMemcpyDeviceToHost));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    return first == 5 && second == 10;
}

// SWITCH of three bodies: values 0..2 pick one, 7 none.
static bool switch_node(int *v, int *out)
{
    const int values[] = {0, 1, 2, 7}, want[] = {100, 200, 300, 0};
    bool ok = true;
    cudaGraph_t g;
    cudaGraphConditionalHandle h;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    void *dargs[] = {&h, &v};
    cudaGraph_t *body = conditional(g, kernel_node(g, NULL, (void *)decide, dargs), h,
                                    cudaGraphCondTypeSwitch, 3);
    int ks[] = {100, 200, 300};
    void *args[3][2] = {{&out, &ks[0]}, {&out, &ks[1]}, {&out, &ks[2]}};
    for (int i = 0; i < 3; i++)
        kernel_node(body[i], NULL, (void *)add, args[i]);
    for (int i = 0; i < 4; i++) {
        CK(cudaMemcpy(v, &values[i], sizeof values[i], cudaMemcpyHostToDevice));
        ok &= run(g, out) == want[i];
    }
    CK(cudaGraphDestroy(g));
    return ok;
}

// A handle created for one graph cannot decide a node of another.
static bool foreign_handle(void)
{
    cudaGraph_t a, b;
    cudaGraphConditionalHandle h;
    CK(cudaGraphCreate(&a, 0));
    CK(cudaGraphCreate(&b, 0));
    CK(cudaGraphConditionalHandleCreate(&h, a, 0, 0));
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeIf;
    p.conditional.size = 1;
    cudaGraphNode_t n;
    cudaError_t e = cudaGraphAddNode(&n, b, NULL, NULL, 0, &p);
    cudaGetLastError();
    p.conditional.handle = 0;
    cudaError_t zero = cudaGraphAddNode(&n, a, NULL, NULL, 0, &p);
    cudaGetLastError();
    CK(cudaGraphDestroy(a));
    CK(cudaGraphDestroy(b));
    return e == cudaErrorInvalidValue && zero == cudaErrorInvalidValue;
}

int main(void)
{
    int *v, *out;
    CK(cudaMalloc(&v, sizeof *v));
    CK(cudaMalloc(&out, sizeof *out));
    bool all = true, ok;
    printf("if_else %s\n", (ok = if_else(v, out)) ? "ok" : "FAILED");
    all &= ok;
    printf("while_loop %s\n", (ok = while_loop(v, out)) ? "ok" : "FAILED");
    all &= ok;
    printf("switch %s\n", (ok = switch_node(v, out)) ? "ok" : "FAILED");
    all &= ok;
    printf("foreign_handle %s\n", (ok = foreign_handle()) ? "ok" : "FAILED");
    all &= ok;
    return all ? 0 : 1;
}
