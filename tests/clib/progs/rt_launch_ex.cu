// cudaLaunchKernelEx (cudaLaunchKernelExC): hint attributes accepted, a cooperative launch
// run (every block resident at once), clusters refused with cudaErrorNotSupported, an unknown
// attribute cudaErrorInvalidValue.
#include <cstdio>

__global__ void fill(int *p, int v)
{
    p[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

int main()
{
    int *d, h[64], c[64];
    cudaMalloc(&d, sizeof h);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(32);
    cudaLaunchAttribute at[2] = {};
    at[0].id = cudaLaunchAttributePriority;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 2;
    cudaError_t hints = cudaLaunchKernelEx(&cfg, fill, d, 7);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cfg.numAttrs = 1;
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cudaError_t coop = cudaLaunchKernelEx(&cfg, fill, d, 8);
    cudaMemcpy(c, d, sizeof c, cudaMemcpyDeviceToHost);
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = at[0].val.clusterDim.z = 1;
    cudaError_t cluster = cudaLaunchKernelEx(&cfg, fill, d, 9);
    at[0].id = (cudaLaunchAttributeID)999;
    cudaError_t unknown = cudaLaunchKernelEx(&cfg, fill, d, 10);
    printf("launch_ex hints=%s h0=%d h63=%d coop=%s c63=%d cluster=%s unknown=%s\n",
           cudaGetErrorName(hints), h[0], h[63], cudaGetErrorName(coop), c[63],
           cudaGetErrorName(cluster), cudaGetErrorName(unknown));
    return 0;
}
