// The runtime over libcuda's context-independent loading and the calls it now takes from the
// driver: a library of PTX loaded without a device chosen, its kernel launched by
// cudaLaunchKernel and described by cudaFuncGetAttributes, its global set per context;
// a non-blocking stream's flags; registered host memory and its pointer attributes.
#include <cstdio>
#include <cuda_runtime.h>

#include "library_ptx.h"
#include "rt_check.h"


static char buf[8192];

int main()
{
    cudaLibrary_t lib;
    cudaKernel_t k, none;
    unsigned n = 0, *base, *out, v = 3, arg = 10, r = 0;
    size_t size = 0;
    CK(cudaLibraryLoadData(&lib, library_ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CK(cudaLibraryGetKernelCount(&n, lib));
    CK(cudaLibraryGetKernel(&k, lib, "addbase"));
    cudaError_t missing = cudaLibraryGetKernel(&none, lib, "nope");
    void *unified = &n;
    cudaError_t no_unified = cudaLibraryGetUnifiedFunction(&unified, lib, "addbase");
    CK(cudaLibraryGetGlobal((void **)&base, &size, lib, "base"));
    CK(cudaMemcpy(base, &v, 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&out, 4));
    void *args[] = {&out, &arg};
    CK(cudaLaunchKernel((const void *)k, dim3(1), dim3(1), args, 0, nullptr));
    CK(cudaMemcpy(&r, out, 4, cudaMemcpyDeviceToHost));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, (const void *)k));
    CK(cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0));
    printf("library kernels=%u r=%u size=%zu threads=%d missing=%s unified=%s,%p\n", n, r,
           size, fa.maxThreadsPerBlock, cudaGetErrorName(missing), cudaGetErrorName(no_unified),
           unified);
    CK(cudaLibraryUnload(lib));

    cudaStream_t s;
    unsigned flags = 9;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamGetFlags(s, &flags));
    unsigned long long sid = 0;
    int sdev = -1;
    CK(cudaStreamGetId(s, &sid));
    CK(cudaStreamGetDevice(s, &sdev));
    CK(cudaStreamDestroy(s));
    cudaPointerAttributes pa, pb;
    CK(cudaHostRegister(buf, sizeof buf, cudaHostRegisterDefault));
    CK(cudaPointerGetAttributes(&pa, buf + 10));
    cudaError_t again = cudaHostRegister(buf + 100, 100, cudaHostRegisterDefault);
    CK(cudaHostUnregister(buf));
    CK(cudaPointerGetAttributes(&pb, buf));
    printf("runtime flags=%u id=%d device=%d registered=%d again=%s unregistered=%d\n", flags,
           sid > 1, sdev, (int)pa.type, cudaGetErrorName(again), (int)pb.type);
    int *m, mostly = 9, where = 9;
    CK(cudaMallocManaged(&m, 8192));
    CK(cudaMemAdvise(m, 4096, cudaMemAdviseSetReadMostly, cudaMemLocation{}));
    CK(cudaMemRangeGetAttribute(&mostly, 4, cudaMemRangeAttributeReadMostly, m, 4096));
    CK(cudaMemRangeGetAttribute(&where, 4, cudaMemRangeAttributePreferredLocation, m, 8192));
    printf("managed read_mostly=%d preferred=%d\n", mostly, where);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 1));
    printf("props uuid=%.4s,%d pools=%d register=%d pitch_align=%zu\n", prop.uuid.bytes,
           prop.uuid.bytes[15], prop.memoryPoolsSupported, prop.hostRegisterSupported,
           prop.texturePitchAlignment);
    CK(cudaFree(m));
    return 0;
}
