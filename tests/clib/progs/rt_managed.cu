// Managed memory as tutorials use it (cudaMallocManaged, kernels and the host on one pointer),
// with prefetch and advice hints, pointer attributes, cudaMemcpyDefault between managed and
// device memory, and the errors CUDA gives.  Built by nvcc -cudart shared, run through
// scripts/gdev-run; prints "rt_managed ok".
#include <cstdio>

__managed__ int counter;                      // __managed__ variables: one name, both sides
__managed__ float vals[4] = {1, 2, 3, 4};

__global__ void bump()
{
    atomicAdd(&counter, 1);
    vals[threadIdx.x % 4] *= 2;
}

__managed__ int is_end;                       // a flag the host hands kernels by address
__managed__ int hits[2];

__global__ void clear_flag(int *flag) { *flag = 0; }

__global__ void count_both(int *by_pointer)
{
    atomicAdd(by_pointer, 1);                 // hits[0], through the host's &hits[0]
    atomicAdd(&hits[1], 2);                   // hits[1], by name
}

__global__ void add(int n, const float *x, float *y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] + y[i];
}

#include "rt_check.h"

static void managed_variables()
{
    counter = 5;                              // the host's write reaches the kernel
    bump<<<1, 4>>>();
    cudaDeviceSynchronize();                  // the kernel's writes reach the host
    int first = counter;
    float v0 = vals[0], v3 = vals[3];
    counter = 100;
    bump<<<1, 1>>>();
    bump<<<1, 1>>>();                         // a second launch keeps the first's result
    cudaStreamSynchronize(0);
    printf("managed_vars counter=%d,%d vals=%g,%g,%g\n", first, counter, v0, v3, vals[0]);
}

// As logic synthesis codes do: `&var` of a __managed__ variable is a pointer kernels can use,
// and what a kernel writes through it is what the host reads; a kernel writing by name
// beside it loses neither side's bytes; a device reset keeps the last values on the host.
static void managed_variable_addresses()
{
    is_end = 1;
    clear_flag<<<1, 1>>>(&is_end);
    cudaDeviceSynchronize();
    int flag = is_end;
    hits[0] = 10;
    hits[1] = 20;
    count_both<<<2, 32>>>(&hits[0]);
    cudaDeviceSynchronize();
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, &is_end);
    int unified = e == cudaSuccess && a.type == cudaMemoryTypeManaged && a.devicePointer == &is_end;
    int h0 = hits[0], h1 = hits[1];
    cudaDeviceReset();
    printf("managed_addresses flag=%d hits=%d,%d unified=%d after_reset=%d,%d\n", flag, h0, h1,
           unified, hits[0], hits[1]);
}

int main()
{
    cudaDeviceProp prop;                      // what samples check before using managed memory
    int attr = -1, concurrent = -1;
    cudaGetDeviceProperties(&prop, 0);
    cudaDeviceGetAttribute(&attr, cudaDevAttrManagedMemory, 0);
    cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0);
    printf("managed_props prop=%d attr=%d concurrent=%d\n", prop.managedMemory, attr, concurrent);
    managed_variables();
    managed_variable_addresses();
    const int n = 1 << 20;
    float *x, *y, *d;
    CK(cudaMallocManaged(&x, n * sizeof(float)));
    CK(cudaMallocManaged(&y, n * sizeof(float), cudaMemAttachHost));
    for (int i = 0; i < n; i++) {
        x[i] = 1.0f;
        y[i] = (float)i;
    }
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0}, host = {cudaMemLocationTypeHost, 0};
    CK(cudaMemAdvise(x, n * sizeof(float), cudaMemAdviseSetReadMostly, gpu));
    CK(cudaStreamAttachMemAsync(0, x, 0, cudaMemAttachGlobal));
    CK(cudaMemPrefetchAsync(x, n * sizeof(float), gpu, 0, 0));
    add<<<64, 256>>>(n, x, y);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemPrefetchAsync(y, n * sizeof(float), host, 0, 0));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += y[i] != (float)i + 1.0f;

    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, y + 5));
    int managed = a.type == cudaMemoryTypeManaged && a.devicePointer == y + 5 &&
                  a.hostPointer == y + 5;
    CK(cudaMalloc(&d, 16 * sizeof(float)));
    CK(cudaMemcpy(d, y, 16 * sizeof(float), cudaMemcpyDefault));       // managed -> device
    CK(cudaMemcpy(x, d, 16 * sizeof(float), cudaMemcpyDefault));       // device -> managed
    int copied = x[0] == 1.0f && x[15] == 16.0f;

    cudaError_t not_managed = cudaMemPrefetchAsync(d, 64, gpu, 0, 0);
    cudaGetLastError();
    cudaError_t attach_dev = cudaStreamAttachMemAsync(0, d, 0, cudaMemAttachSingle);
    cudaGetLastError();
    float *z;
    cudaError_t bad_flags = cudaMallocManaged(&z, 64, 0);
    cudaGetLastError();
    cudaError_t too_big = cudaMallocManaged(&z, (size_t)1 << 40);
    cudaGetLastError();
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaFree(d));
    cudaError_t twice = cudaFree(x);
    printf("rt_managed %s bad=%d managed=%d copied=%d not_managed=%s attach_dev=%s "
           "bad_flags=%s too_big=%s twice=%s\n", bad || !managed || !copied ? "FAILED" : "ok",
           bad, managed, copied, cudaGetErrorName(not_managed), cudaGetErrorName(attach_dev),
           cudaGetErrorName(bad_flags), cudaGetErrorName(too_big), cudaGetErrorName(twice));
    return bad || !managed || !copied;
}
