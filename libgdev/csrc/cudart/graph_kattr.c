/* CUDA graphs: the launch attributes of kernel nodes (cudaGraphKernelNode{Get,Set}Attribute,
 * cudaGraphKernelNodeCopyAttributes).  A node keeps the attributes set on it, by id, across
 * new parameters; an attribute never set reads as zero, CUDA's default.  Of them, the
 * cooperative one changes the launch (graph_issue.c launches such a node cooperatively); the
 * others (priority, access policy window, clusters of one block, memory sync domains, ...)
 * are kept and said back, as hints that change nothing here. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

#define KATTRS_MAX 32   /* distinct attribute ids a node can hold (CUDA 13 has fewer) */

static struct kernel_op *kernel_of(cudaGraphNode_t nd)
{
    return nd && nd->op.type == cudaGraphNodeTypeKernel ? &nd->op.u.k : NULL;
}

const cudaLaunchAttributeValue *rt_kattr(const struct kernel_op *k, cudaLaunchAttributeID id)
{
    for (int i = 0; i < k->nattrs; i++)
        if (k->attrs[i].id == id)
            return &k->attrs[i].val;
    return NULL;
}

API cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t nd, cudaLaunchAttributeID id,
                                                cudaLaunchAttributeValue *out)
{
    const struct kernel_op *k = kernel_of(nd);
    if (!k || !out)
        return rt_set(cudaErrorInvalidValue);
    const cudaLaunchAttributeValue *v = rt_kattr(k, id);
    if (v)
        *out = *v;
    else
        memset(out, 0, sizeof *out);
    return cudaSuccess;
}

API cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t nd, cudaLaunchAttributeID id,
                                                const cudaLaunchAttributeValue *value)
{
    struct kernel_op *k = kernel_of(nd);
    if (!k || !value || (unsigned)id >= KATTRS_MAX)
        return rt_set(cudaErrorInvalidValue);
    cudaLaunchAttributeValue *v = (cudaLaunchAttributeValue *)rt_kattr(k, id);
    if (!v) {
        struct kattr *p = realloc(k->attrs, ((size_t)k->nattrs + 1) * sizeof *p);
        if (!p)
            return rt_set(cudaErrorMemoryAllocation);
        k->attrs = p;
        p[k->nattrs].id = id;
        v = &p[k->nattrs++].val;
    }
    *v = *value;
    return cudaSuccess;
}

cudaError_t rt_kattrs_copy(struct kernel_op *to, const struct kernel_op *from)
{
    to->attrs = NULL;
    to->nattrs = 0;
    if (!from->nattrs)
        return cudaSuccess;
    if (!(to->attrs = malloc((size_t)from->nattrs * sizeof *to->attrs)))
        return cudaErrorMemoryAllocation;
    memcpy(to->attrs, from->attrs, (size_t)from->nattrs * sizeof *to->attrs);
    to->nattrs = from->nattrs;
    return cudaSuccess;
}

API cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t dst, cudaGraphNode_t src)
{
    struct kernel_op *to = kernel_of(dst), copy;
    const struct kernel_op *from = kernel_of(src);
    if (!to || !from)
        return rt_set(cudaErrorInvalidValue);
    if (rt_kattrs_copy(&copy, from))
        return rt_set(cudaErrorMemoryAllocation);
    free(to->attrs);
    to->attrs = copy.attrs;
    to->nattrs = copy.nattrs;
    return cudaSuccess;
}
