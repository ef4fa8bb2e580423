// Streams and events of one device used while another is current, as CUDA's programming guide
// states it (and p2pBandwidthLatencyTest relies on): a kernel launch into another device's
// stream fails; a copy into it succeeds and runs there; cudaEventRecord needs event and stream
// of one device, not the current one; cudaStreamWaitEvent and cudaStreamSynchronize work on
// any device's stream.  Built by nvcc -cudart shared; prints "rt_multidev ok ...".
#include <cstdio>

#include "rt_check.h"

__global__ void slow_write(int *out, int value, int spins)
{
    for (volatile int i = 0; i < spins; i = i + 1)  // long enough that a sync that does not
        ;                                           // wait reads the old value
    *out = value;
}

int main()
{
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        printf("rt_multidev needs 2 devices, has %d\n", count);
        return 1;
    }
    int *pinned, *d0, *d1, h = 0;
    cudaStream_t s0, s1;
    cudaEvent_t e0, e1;
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&d1, 4 * sizeof(int)));
    CK(cudaMemset(d1, 0, 4 * sizeof(int)));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e1));
    CK(cudaSetDevice(0));
    CK(cudaMallocHost(&pinned, 4 * sizeof(int)));
    CK(cudaMalloc(&d0, sizeof(int)));
    pinned[0] = pinned[1] = 0;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));

    // device 0 current, device 1's stream
    slow_write<<<1, 1, 0, s1>>>(d1, 5, 10);
    cudaError_t launch = cudaGetLastError();
    int v = 41;
    CK(cudaMemcpyAsync(d1, &v, sizeof v, cudaMemcpyHostToDevice, s1));
    CK(cudaMemcpyAsync(&h, d1, sizeof h, cudaMemcpyDeviceToHost, s1));
    CK(cudaStreamSynchronize(s1));
    cudaError_t wrong_pair = cudaEventRecord(e0, s1);
    cudaGetLastError();

    // device 1's work, waited for from device 0 by an event and by a stream sync
    CK(cudaSetDevice(1));
    slow_write<<<1, 1, 0, s1>>>(d1 + 1, 7, 20000);
    CK(cudaGetLastError());
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(e1, s1));
    CK(cudaStreamWaitEvent(s0, e1, 0));       // s0's copy runs after device 1's kernel
    CK(cudaMemcpyPeerAsync(d0, 0, d1 + 1, 1, sizeof(int), s0));
    CK(cudaMemcpyAsync(pinned, d0, sizeof(int), cudaMemcpyDeviceToHost, s0));
    CK(cudaStreamSynchronize(s0));
    int waited = pinned[0];
    CK(cudaSetDevice(1));
    slow_write<<<1, 1, 0, s1>>>(d1 + 2, 9, 20000);
    CK(cudaMemcpyAsync(pinned + 1, d1 + 2, sizeof(int), cudaMemcpyDeviceToHost, s1));
    CK(cudaSetDevice(0));
    CK(cudaStreamSynchronize(s1));            // device 1's stream, from device 0
    int synced = pinned[1];
    printf("rt_multidev ok launch=%s copied=%d wrong_pair=%s waited=%d synced=%d\n",
           cudaGetErrorName(launch), h, cudaGetErrorName(wrong_pair), waited, synced);
    return 0;
}
