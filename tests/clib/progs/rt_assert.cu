// Device assert through the runtime, as CUDA's simpleAssert sample uses it: the failing
// thread's assertion is printed on stderr at the synchronization, which returns
// cudaErrorAssert; the context stays poisoned (later launches and syncs fail the same way).
#include <cassert>
#include <cstdio>

__global__ void checked(int n)
{
    int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    assert(gtid < n);
}

int main()
{
    checked<<<2, 32>>>(64);
    cudaError_t ok = cudaDeviceSynchronize();
    checked<<<2, 32>>>(60);
    cudaError_t e = cudaDeviceSynchronize();
    printf("ok=%s sync=%s (%s)\n", cudaGetErrorName(ok), cudaGetErrorName(e),
           cudaGetErrorString(e));
    checked<<<1, 32>>>(64);
    cudaError_t launch = cudaGetLastError();
    printf("again launch=%s sync=%s\n", cudaGetErrorName(launch),
           cudaGetErrorName(cudaDeviceSynchronize()));
    return ok == cudaSuccess && e == cudaErrorAssert ? 0 : 1;
}
