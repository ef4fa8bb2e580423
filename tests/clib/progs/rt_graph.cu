// CUDA graphs by stream capture (libcudart's graph.c): a memset, two kernels, an event and a
// copy back captured once and launched three times; capture on the legacy stream refused; a
// synchronization inside a capture refused and the capture invalidated.
#include <cstdio>

__global__ void axpb(int *v, int a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = v[i] * a + b;
}

__global__ void count(int *v, int *total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, v[i] & 1);
}

int main()
{
    const int n = 1000;
    int *v, *total, host_total = -1, first[3] = {0};
    cudaStream_t s;
    cudaEvent_t ev;
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaMalloc(&v, n * sizeof(int));
    cudaMalloc(&total, sizeof(int));
    cudaMemset(v, 0, n * sizeof(int));
    cudaStreamCreate(&s);
    cudaEventCreate(&ev);
    cudaError_t legacy = cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);
    cudaGetLastError();
    cudaStreamCaptureStatus before, during;
    cudaStreamIsCapturing(s, &before);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaStreamIsCapturing(s, &during);
    cudaMemsetAsync(total, 0, sizeof(int), s);
    axpb<<<(n + 255) / 256, 256, 0, s>>>(v, 3, 1, n);        // arguments captured by value
    count<<<(n + 255) / 256, 256, 0, s>>>(v, total, n);
    cudaEventRecord(ev, s);
    cudaMemcpyAsync(&host_total, total, sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    size_t nodes = 0;
    cudaGraphGetNodes(g, NULL, &nodes);
    int ran_during_capture = host_total;                       // nothing ran yet
    cudaGraphInstantiate(&x, g, 0);
    for (int k = 0; k < 3; k++) {
        cudaGraphLaunch(x, s);
        cudaStreamSynchronize(s);
        first[k] = host_total;
    }
    int v0;
    cudaMemcpy(&v0, v, sizeof v0, cudaMemcpyDeviceToHost);     // 0 -> 1 -> 4 -> 13
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaError_t sync = cudaStreamSynchronize(s);
    cudaGraph_t bad;
    cudaError_t invalid = cudaStreamEndCapture(s, &bad);
    cudaGetLastError();
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    printf("graph legacy=%s status=%d,%d end=%s nodes=%zu pending=%d totals=%d,%d,%d v0=%d "
           "sync=%s invalid=%s\n", cudaGetErrorName(legacy), (int)before, (int)during,
           cudaGetErrorName(end), nodes, ran_during_capture, first[0], first[1], first[2], v0,
           cudaGetErrorName(sync), cudaGetErrorName(invalid));
    return 0;
}
