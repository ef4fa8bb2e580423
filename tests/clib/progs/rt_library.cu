// The runtime over libcuda's context-independent loading and the calls it now takes from the
// driver: a library of PTX loaded without a device chosen, its kernel launched by
// cudaLaunchKernel and described by cudaFuncGetAttributes, its global set per context;
// a non-blocking stream's flags; registered host memory and its pointer attributes.
#include <cstdio>
#include <cuda_runtime.h>

#include "rt_check.h"

static const char ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .global .align 4 .u32 base = 5;\n\n"
    ".visible .entry addbase(.param .u64 out, .param .u32 v)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<4>;\n    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [v];\n    ld.global.u32 %r2, [base];\n    add.s32 %r3, %r1, %r2;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    st.global.u32 [%rd2], %r3;\n    ret;\n}\n\n"
    ".visible .entry noop()\n{\n    ret;\n}\n";

static char buf[8192];

int main()
{
    cudaLibrary_t lib;
    cudaKernel_t k, none;
    unsigned n = 0, *base, *out, v = 3, arg = 10, r = 0;
    size_t size = 0;
    CK(cudaLibraryLoadData(&lib, ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CK(cudaLibraryGetKernelCount(&n, lib));
    CK(cudaLibraryGetKernel(&k, lib, "addbase"));
    cudaError_t missing = cudaLibraryGetKernel(&none, lib, "nope");
    CK(cudaLibraryGetGlobal((void **)&base, &size, lib, "base"));
    CK(cudaMemcpy(base, &v, 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&out, 4));
    void *args[] = {&out, &arg};
    CK(cudaLaunchKernel((const void *)k, dim3(1), dim3(1), args, 0, nullptr));
    CK(cudaMemcpy(&r, out, 4, cudaMemcpyDeviceToHost));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, (const void *)k));
    CK(cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0));
    printf("library kernels=%u r=%u size=%zu threads=%d missing=%s\n", n, r, size,
           fa.maxThreadsPerBlock, cudaGetErrorName(missing));
    CK(cudaLibraryUnload(lib));

    cudaStream_t s;
    unsigned flags = 9;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamGetFlags(s, &flags));
    CK(cudaStreamDestroy(s));
    cudaPointerAttributes pa, pb;
    CK(cudaHostRegister(buf, sizeof buf, cudaHostRegisterDefault));
    CK(cudaPointerGetAttributes(&pa, buf + 10));
    cudaError_t again = cudaHostRegister(buf + 100, 100, cudaHostRegisterDefault);
    CK(cudaHostUnregister(buf));
    CK(cudaPointerGetAttributes(&pb, buf));
    printf("runtime flags=%u registered=%d again=%s unregistered=%d\n", flags, (int)pa.type,
           cudaGetErrorName(again), (int)pb.type);
    int *m, mostly = 9, where = 9;
    CK(cudaMallocManaged(&m, 8192));
    CK(cudaMemAdvise(m, 4096, cudaMemAdviseSetReadMostly, cudaMemLocation{}));
    CK(cudaMemRangeGetAttribute(&mostly, 4, cudaMemRangeAttributeReadMostly, m, 4096));
    CK(cudaMemRangeGetAttribute(&where, 4, cudaMemRangeAttributePreferredLocation, m, 8192));
    printf("managed read_mostly=%d preferred=%d\n", mostly, where);
    CK(cudaFree(m));
    return 0;
}
