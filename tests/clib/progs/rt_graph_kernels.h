// The kernels of the graph test programs (rt_graph_dag.cu, rt_graph_capture.cu).
#ifndef RT_GRAPH_KERNELS_H
#define RT_GRAPH_KERNELS_H

// v = v * a + b
__global__ void axpb(int *v, int a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = v[i] * a + b;
}

// c = a + b
__global__ void addv(const int *a, const int *b, int *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

#endif
