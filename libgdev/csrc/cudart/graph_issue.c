/* CUDA graphs: issuing one operation of an executable graph in a stream, through the same
 * calls a program would make (so a graph launch is stream-ordered with all other work). */
#include <stdint.h>

#include "graph.h"

/* A memset of elementSize-byte elements, `height` rows `pitch` bytes apart. */
static cudaError_t memset_rows(const struct cudaMemsetParams *p, cudaStream_t s)
{
    size_t row = p->width * p->elementSize, rows = p->height ? p->height : 1;
    size_t n = p->width, pitch = p->pitch;
    if (rows == 1 || pitch == row) { /* contiguous: one operation */
        n *= rows;
        rows = 1;
    }
    for (size_t r = 0; r < rows; r++) {
        void *d = (uint8_t *)p->dst + r * pitch;
        CUresult e = CUDA_SUCCESS;
        if (p->elementSize == 1)
            e = cuMemsetD8Async((CUdeviceptr)(uintptr_t)d, (unsigned char)p->value, n, s);
        else if (p->elementSize == 2)
            e = cuMemsetD16Async((CUdeviceptr)(uintptr_t)d, (unsigned short)p->value, n, s);
        else
            e = cuMemsetD32Async((CUdeviceptr)(uintptr_t)d, p->value, n, s);
        if (e)
            return rt_from(e);
    }
    return cudaSuccess;
}

cudaError_t rt_op_issue(const struct op *op, cudaStream_t s)
{
    const struct kernel_op *k = &op->u.k;
    switch (op->type) {
    case cudaGraphNodeTypeKernel: {
        const cudaLaunchAttributeValue *coop = rt_kattr(k, cudaLaunchAttributeCooperative);
        if (coop && coop->cooperative)
            return cudaLaunchCooperativeKernel(k->func, k->grid, k->block, k->argv, k->shared, s);
        return cudaLaunchKernel(k->func, k->grid, k->block, k->argv, k->shared, s);
    }
    case cudaGraphNodeTypeMemcpy:
        return cudaMemcpy3DAsync(&op->u.copy, s);
    case cudaGraphNodeTypeMemset:
        return memset_rows(&op->u.set, s);
    case cudaGraphNodeTypeHost:
        return cudaLaunchHostFunc(s, op->u.host.fn, op->u.host.userData);
    case cudaGraphNodeTypeEventRecord:
        return cudaEventRecord(op->u.event, s);
    case cudaGraphNodeTypeWaitEvent:
        return cudaStreamWaitEvent(s, op->u.event, 0);
    case cudaGraphNodeTypeConditional:
        return rt_cond_issue(&op->u.cond, s);
    default: /* empty nodes; memory nodes (graph_mem.c); child graphs are inlined */
        return cudaSuccess;
    }
}
