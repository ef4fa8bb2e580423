// Runtime calls of CUDA 12/13 and the older array forms, each checked by value: linear copies
// between arrays at offsets and the asynchronous array copies, a 3D memset in a stream, 3D peer
// copies (one device, and across two vGPUs), the dynamic shared memory a kernel may have, the
// valid-devices list, the 1D linear texture limit, pools by location and batched copies.
#include <cstdio>
#include <cstring>

#include "rt_check.h"

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

__global__ void uses_shared(float *o)
{
    __shared__ float t[256];
    t[threadIdx.x] = 1.0f;
    __syncthreads();
    o[threadIdx.x] = t[255 - threadIdx.x];
}

// Two 16x4 arrays of floats: 20 floats from (3,1) of one to (5,2) of the other, by bytes.
static int arrays(void)
{
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
    cudaArray_t a, b;
    float in[64], out[64], back[20];
    for (int i = 0; i < 64; i++)
        in[i] = (float)i;
    memset(out, 0, sizeof out);
    CK(cudaMallocArray(&a, &f, 16, 4));
    CK(cudaMallocArray(&b, &f, 16, 4));
    CK(cudaMemcpyToArrayAsync(a, 0, 0, in, sizeof in, cudaMemcpyHostToDevice, 0));
    CK(cudaMemcpyToArray(b, 0, 0, out, sizeof out, cudaMemcpyHostToDevice));
    CK(cudaMemcpyArrayToArray(b, 5 * 4, 2, a, 3 * 4, 1, 20 * 4));
    CK(cudaMemcpyFromArrayAsync(back, b, 5 * 4, 2, sizeof back, cudaMemcpyDeviceToHost, 0));
    CK(cudaStreamSynchronize(0));
    int ok = 1;
    for (int i = 0; i < 20; i++)
        ok &= back[i] == in[16 + 3 + i];
    cudaError_t dir = cudaMemcpyArrayToArray(b, 0, 0, a, 0, 0, 4, cudaMemcpyHostToDevice);
    cudaGetLastError();
    printf("arrays to_array=%d direction=%s\n", ok, name(dir));
    CK(cudaFreeArray(a));
    CK(cudaFreeArray(b));
    return 0;
}

// A 3D memset in a stream, then a 3D peer copy on one device and one across two devices.
static int memset_and_peer(int n)
{
    cudaExtent e = make_cudaExtent(40, 3, 2);
    cudaPitchedPtr p, q, r;
    CK(cudaMalloc3D(&p, e));
    CK(cudaMalloc3D(&q, e));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMemset3DAsync(p, 7, e, s));
    CK(cudaStreamSynchronize(s));
    cudaMemcpy3DPeerParms c = {};
    c.srcPtr = p;
    c.dstPtr = q;
    c.extent = e;
    c.srcDevice = c.dstDevice = 0;
    CK(cudaMemcpy3DPeer(&c));
    unsigned char row[40];
    CK(cudaMemcpy(row, (char *)q.ptr + q.pitch * q.ysize + q.pitch * 2, 40, cudaMemcpyDeviceToHost));
    int same = row[0] == 7 && row[39] == 7;
    CK(cudaSetDevice(n - 1));
    CK(cudaMalloc3D(&r, e));
    CK(cudaMemset3D(r, 0, e));
    CK(cudaSetDevice(0));
    c.dstPtr = r;
    c.dstDevice = n - 1;
    CK(cudaMemcpy3DPeerAsync(&c, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaSetDevice(n - 1));
    CK(cudaMemcpy(row, (char *)r.ptr + r.pitch * r.ysize + r.pitch * 2, 40, cudaMemcpyDeviceToHost));
    CK(cudaSetDevice(0));
    printf("memset3d same=%d across=%d\n", same, row[0] == 7 && row[39] == 7);
    CK(cudaStreamDestroy(s));
    return 0;
}

// Dynamic shared memory per block: 64 KiB per multiprocessor shared by the blocks, less
// the kernel's 1 KiB; the valid-devices list; limits; pools by location; batched copies.
static int misc(int n)
{
    size_t one = 0, two = 0, width = 0;
    CK(cudaOccupancyAvailableDynamicSMemPerBlock(&one, uses_shared, 1, 256));
    CK(cudaOccupancyAvailableDynamicSMemPerBlock(&two, uses_shared, 2, 256));
    int devs[] = {n - 1, 0}, dup[] = {1, 1}, bad[] = {n}, dev = -1;
    CK(cudaSetValidDevices(devs, 2));
    CK(cudaGetDevice(&dev));
    cudaError_t d = cudaSetValidDevices(dup, 2), b = cudaSetValidDevices(bad, 1);
    cudaGetLastError();
    CK(cudaSetDevice(0));
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
    CK(cudaDeviceGetTexture1DLinearMaxWidth(&width, &f, 0));
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    cudaMemPool_t def, cur, mine;
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location = loc;
    CK(cudaMemGetDefaultMemPool(&def, &loc, cudaMemAllocationTypePinned));
    CK(cudaMemPoolCreate(&mine, &props));
    CK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, mine));
    CK(cudaMemGetMemPool(&cur, &loc, cudaMemAllocationTypePinned));
    int set = cur == mine;
    CK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, def));
    CK(cudaMemPoolDestroy(mine));
    int *dv;
    int h1[4] = {1, 2, 3, 4}, h2[4] = {5, 6, 7, 8}, back[8];
    CK(cudaMalloc(&dv, sizeof back));
    void *dsts[] = {dv, dv + 4, back};
    const void *srcs[] = {h1, h2, dv};
    size_t sizes[] = {sizeof h1, sizeof h2, sizeof back};
    cudaMemcpyAttributes at = {};
    at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0, bad_idx = 1;
    CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &idx, 1, 0));
    CK(cudaMemcpyBatchAsync(dsts + 2, srcs + 2, sizes + 2, 1, &at, &idx, 1, 0));
    CK(cudaStreamSynchronize(0));
    cudaError_t bi = cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &bad_idx, 1, 0);
    cudaGetLastError();
    printf("misc smem=%zu,%zu valid=%d dup=%s bad=%s tex1d=%zu pool_set=%d batch=%d,%d "
           "bad_idx=%s\n", one, two, dev, name(d), name(b), width, set, back[0] + back[3],
           back[4] + back[7], name(bi));
    CK(cudaFree(dv));
    return 0;
}

// Portable pinned memory (simpleCallback's): allocated on device 0, copied to and from on
// the last device, freed there.
static int portable(int n)
{
    int *h, *d, same = 1;
    CK(cudaHostAlloc((void **)&h, 4096, cudaHostAllocPortable));
    for (int i = 0; i < 4; i++)
        h[i] = 40 + i;
    CK(cudaSetDevice(n - 1));
    CK(cudaMalloc(&d, 16));
    CK(cudaMemcpy(d, h, 16, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(h + 4, d, 16, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++)
        same &= h[4 + i] == 40 + i;
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
    CK(cudaSetDevice(0));
    printf("portable same=%d\n", same);
    return 0;
}

int main(void)
{
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (arrays() || memset_and_peer(n) || misc(n) || portable(n))
        return 1;
    printf("rt_newer_api ok\n");
    return 0;
}
