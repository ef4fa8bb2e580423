/* libcudart.so.12 only (built with RT_CUDA12_ABI): the CUDA 12 forms of the graph and capture
 * calls whose arguments changed in CUDA 13 (edge data added), under their plain names, for
 * programs built by nvcc 12.  Each passes default edges to the CUDA 13 form, which this
 * library exports under CUDA 12's suffixed name (cudart_internal.h renames it). */
#include "cudart_internal.h"

#ifdef RT_CUDA12_ABI
#define V12(ret, c_name, abi_name, params) \
    API ret c_name params __asm__(abi_name); \
    API ret c_name params

V12(cudaError_t, rt12_add_dependencies, "cudaGraphAddDependencies",
    (cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to, size_t n))
{
    return cudaGraphAddDependencies(g, from, to, NULL, n);
}

V12(cudaError_t, rt12_remove_dependencies, "cudaGraphRemoveDependencies",
    (cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to, size_t n))
{
    return cudaGraphRemoveDependencies(g, from, to, NULL, n);
}

V12(cudaError_t, rt12_get_edges, "cudaGraphGetEdges",
    (cudaGraph_t g, cudaGraphNode_t *from, cudaGraphNode_t *to, size_t *n))
{
    return cudaGraphGetEdges(g, from, to, NULL, n);
}

V12(cudaError_t, rt12_node_get_dependencies, "cudaGraphNodeGetDependencies",
    (cudaGraphNode_t nd, cudaGraphNode_t *deps, size_t *n))
{
    return cudaGraphNodeGetDependencies(nd, deps, NULL, n);
}

V12(cudaError_t, rt12_node_get_dependent_nodes, "cudaGraphNodeGetDependentNodes",
    (cudaGraphNode_t nd, cudaGraphNode_t *out, size_t *n))
{
    return cudaGraphNodeGetDependentNodes(nd, out, NULL, n);
}

V12(cudaError_t, rt12_add_node, "cudaGraphAddNode",
    (cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
     struct cudaGraphNodeParams *p))
{
    return cudaGraphAddNode(out, g, deps, NULL, n, p);
}

/* CUDA 12's cudaStreamGetCaptureInfo and its _v2 alias (CUDA 11.3 on) take no edge data. */
V12(cudaError_t, rt12_get_capture_info, "cudaStreamGetCaptureInfo",
    (cudaStream_t s, enum cudaStreamCaptureStatus *status, unsigned long long *id,
     cudaGraph_t *graph, const cudaGraphNode_t **deps, size_t *n))
{
    return cudaStreamGetCaptureInfo(s, status, id, graph, deps, NULL, n);
}

V12(cudaError_t, rt12_get_capture_info_v2, "cudaStreamGetCaptureInfo_v2",
    (cudaStream_t s, enum cudaStreamCaptureStatus *status, unsigned long long *id,
     cudaGraph_t *graph, const cudaGraphNode_t **deps, size_t *n))
{
    return cudaStreamGetCaptureInfo(s, status, id, graph, deps, NULL, n);
}

V12(cudaError_t, rt12_update_capture_dependencies, "cudaStreamUpdateCaptureDependencies",
    (cudaStream_t s, cudaGraphNode_t *deps, size_t n, unsigned int flags))
{
    return cudaStreamUpdateCaptureDependencies(s, deps, NULL, n, flags);
}
#endif /* RT_CUDA12_ABI */
