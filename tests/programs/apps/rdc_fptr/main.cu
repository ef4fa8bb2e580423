// simpleSeparateCompilation's shape (nvcc -rdc=true): __device__ function pointers of this
// unit initialized with functions of lib.cu, read by the host with cudaMemcpyFromSymbol and
// passed to a kernel that calls through them.
#include <cstdio>

typedef float (*deviceFunc)(float);
extern __device__ float multiplyByTwo(float);
extern __device__ float divideByTwo(float);
__device__ deviceFunc dMultiplyByTwoPtr = multiplyByTwo;
__device__ deviceFunc dDivideByTwoPtr = divideByTwo;

__global__ void transformVector(float *v, deviceFunc f, unsigned size)
{
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < size)
        v[tid] = (*f)(v[tid]);
}

int main()
{
    const int n = 1000;
    float h[n], *d;
    deviceFunc fp;
    for (int i = 0; i < n; i++)
        h[i] = (float)i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    // times two, half, times two, times two: four times the input
    cudaMemcpyFromSymbol(&fp, dMultiplyByTwoPtr, sizeof fp);
    transformVector<<<(n + 255) / 256, 256>>>(d, fp, n);
    cudaMemcpyFromSymbol(&fp, dDivideByTwoPtr, sizeof fp);
    transformVector<<<(n + 255) / 256, 256>>>(d, fp, n);
    cudaMemcpyFromSymbol(&fp, dMultiplyByTwoPtr, sizeof fp);
    transformVector<<<(n + 255) / 256, 256>>>(d, fp, n);
    transformVector<<<(n + 255) / 256, 256>>>(d, fp, n);
    cudaError_t e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += h[i] != 4.0f * i;
    printf("%s h[7]=%g\n%s\n", cudaGetErrorString(e), h[7], bad ? "fptr FAILED" : "fptr ok");
    return bad != 0;
}
