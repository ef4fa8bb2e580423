/* libcudart.so.12 as a program built by nvcc 12 calls it: the graph and capture calls whose
 * arguments CUDA 13 changed, with the prototypes of CUDA 12's cuda_runtime_api.h (declared
 * here: this machine has CUDA 13's headers), and their _v2/_v3 forms with edge data. */
#include <stddef.h>
#include <stdio.h>

typedef int cudaError_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;
typedef struct CUstream_st *cudaStream_t;

cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned flags);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *nd, cudaGraph_t g,
                                  const cudaGraphNode_t *deps, size_t n);
cudaError_t cudaGraphGetRootNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n);
cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from,
                                     const cudaGraphNode_t *to, size_t n);
cudaError_t cudaGraphAddDependencies_v2(cudaGraph_t g, const cudaGraphNode_t *from,
                                        const cudaGraphNode_t *to, const void *edges,
                                        size_t n);
cudaError_t cudaGraphRemoveDependencies(cudaGraph_t g, const cudaGraphNode_t *from,
                                        const cudaGraphNode_t *to, size_t n);
cudaError_t cudaGraphGetEdges(cudaGraph_t g, cudaGraphNode_t *from, cudaGraphNode_t *to,
                              size_t *n);
cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t nd, cudaGraphNode_t *deps,
                                         size_t *n);
cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t nd, cudaGraphNode_t *out,
                                           size_t *n);
cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, int mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, int *status, unsigned long long *id,
                                     cudaGraph_t *g, const cudaGraphNode_t **deps, size_t *n);
cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t s, int *status, unsigned long long *id,
                                        cudaGraph_t *g, const cudaGraphNode_t **deps,
                                        size_t *n);
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t *deps,
                                                size_t n, unsigned flags);

int main(void)
{
    cudaGraph_t g, cap, seen = NULL;
    cudaGraphNode_t a, b, c;
    size_t edges = 0, deps = 0, dependents = 0, left = 0, n1 = 0, n2 = 0, roots = 0;
    int err = 0, st1 = -1, st2 = -1;
    err |= cudaGraphCreate(&g, 0);
    err |= cudaGraphAddEmptyNode(&a, g, NULL, 0);
    err |= cudaGraphAddEmptyNode(&b, g, NULL, 0);
    err |= cudaGraphAddEmptyNode(&c, g, NULL, 0);
    err |= cudaGraphAddDependencies(g, &a, &b, 1);
    err |= cudaGraphAddDependencies_v2(g, &b, &c, NULL, 1);
    err |= cudaGraphGetEdges(g, NULL, NULL, &edges);
    err |= cudaGraphNodeGetDependencies(c, NULL, &deps);
    err |= cudaGraphNodeGetDependentNodes(a, NULL, &dependents);
    err |= cudaGraphRemoveDependencies(g, &a, &b, 1);
    err |= cudaGraphGetEdges(g, NULL, NULL, &left);
    err |= cudaGraphDestroy(g);

    void *p;
    cudaStream_t s;
    unsigned long long id = 0;
    const cudaGraphNode_t *front = NULL;
    err |= cudaMalloc(&p, 64);
    err |= cudaStreamCreate(&s);
    err |= cudaStreamBeginCapture(s, 0);
    err |= cudaMemsetAsync(p, 0, 64, s);
    err |= cudaStreamGetCaptureInfo(s, &st1, &id, &seen, &front, &n1);
    err |= cudaStreamGetCaptureInfo_v2(s, &st2, &id, NULL, NULL, &n2);
    err |= cudaStreamUpdateCaptureDependencies(s, NULL, 0, 1); /* set: none */
    err |= cudaMemsetAsync(p, 1, 64, s);                       /* a second root */
    err |= cudaStreamEndCapture(s, &cap);
    err |= cudaGraphGetRootNodes(cap, NULL, &roots);
    err |= cudaGraphDestroy(cap);
    err |= cudaStreamDestroy(s);
    err |= cudaFree(p);
    printf("abi12 err=%d edges=%zu deps=%zu dependents=%zu left=%zu capture=%d,%d,%d n=%zu,%zu "
           "roots=%zu\n", err, edges, deps, dependents, left, st1, st2, seen != NULL && id != 0,
           n1, n2, roots);
    return 0;
}
