/* CUDA graphs: copy nodes to and from __device__/__constant__ symbols.  A symbol resolves to
 * its address in the current device's context (cudaGetSymbolAddress) and its size bounds
 * offset + count; the node is then a 1D copy node like cudaGraphAddMemcpyNode1D's. */
#include <stdint.h>

#include "graph.h"

/* The address `offset` bytes into `symbol`, with `count` bytes from there inside it. */
static cudaError_t at_symbol(const void *symbol, size_t count, size_t offset, void **addr)
{
    size_t size = 0;
    cudaError_t e = cudaGetSymbolAddress(addr, symbol);
    if (!e)
        e = cudaGetSymbolSize(&size, symbol);
    if (!e && (offset > size || count > size - offset || !count))
        e = cudaErrorInvalidValue;
    if (!e)
        *addr = (uint8_t *)*addr + offset;
    return e;
}

/* The symbol's end of a copy into it (to_symbol: from the host or the device) or out of it,
 * with the copy's direction checked. */
static cudaError_t resolve(const void *symbol, size_t count, size_t offset,
                           enum cudaMemcpyKind kind, int to_symbol, void **addr)
{
    if (kind != cudaMemcpyDefault && kind != cudaMemcpyDeviceToDevice &&
        kind != (to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost))
        return cudaErrorInvalidMemcpyDirection;
    return at_symbol(symbol, count, offset, addr);
}

API cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t *out, cudaGraph_t g,
                                               const cudaGraphNode_t *deps, size_t n,
                                               const void *symbol, const void *src,
                                               size_t count, size_t offset,
                                               enum cudaMemcpyKind kind)
{
    void *dst;
    cudaError_t e = resolve(symbol, count, offset, kind, 1, &dst);
    return e ? rt_set(e) : cudaGraphAddMemcpyNode1D(out, g, deps, n, dst, src, count, kind);
}

API cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t *out, cudaGraph_t g,
                                                 const cudaGraphNode_t *deps, size_t n,
                                                 void *dst, const void *symbol, size_t count,
                                                 size_t offset, enum cudaMemcpyKind kind)
{
    void *src;
    cudaError_t e = resolve(symbol, count, offset, kind, 0, &src);
    return e ? rt_set(e) : cudaGraphAddMemcpyNode1D(out, g, deps, n, dst, src, count, kind);
}

API cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t nd, const void *symbol,
                                                     const void *src, size_t count,
                                                     size_t offset, enum cudaMemcpyKind kind)
{
    void *dst;
    cudaError_t e = resolve(symbol, count, offset, kind, 1, &dst);
    return e ? rt_set(e) : cudaGraphMemcpyNodeSetParams1D(nd, dst, src, count, kind);
}

API cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t nd, void *dst,
                                                       const void *symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind)
{
    void *src;
    cudaError_t e = resolve(symbol, count, offset, kind, 0, &src);
    return e ? rt_set(e) : cudaGraphMemcpyNodeSetParams1D(nd, dst, src, count, kind);
}

API cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                         const void *symbol, const void *src,
                                                         size_t count, size_t offset,
                                                         enum cudaMemcpyKind kind)
{
    void *dst;
    cudaError_t e = resolve(symbol, count, offset, kind, 1, &dst);
    return e ? rt_set(e) : cudaGraphExecMemcpyNodeSetParams1D(x, nd, dst, src, count, kind);
}

API cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t x, cudaGraphNode_t nd,
                                                           void *dst, const void *symbol,
                                                           size_t count, size_t offset,
                                                           enum cudaMemcpyKind kind)
{
    void *src;
    cudaError_t e = resolve(symbol, count, offset, kind, 0, &src);
    return e ? rt_set(e) : cudaGraphExecMemcpyNodeSetParams1D(x, nd, dst, src, count, kind);
}
