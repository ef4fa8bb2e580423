// Runtime calls CUDA's samples make beyond the basics, each with its documented errors:
// PCI addresses, choosing a device, peer access and peer copies between vGPUs, kernels by
// host stub (name, driver handle, parameter layout), bank configuration, driver entry points,
// stream attributes, the capture mode, memory pools with cudaMallocAsync, a CUDA array's
// channel descriptor and pinned memory's flags.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>

#include "rt_check.h"
#include "rt_graph_kernels.h"

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

static int pci_and_peers(int n)
{
    char id[32], shortid[8];
    int by_id = -1, by_short = -1, last = -1, attr_bus = -1, chosen = -1, p2p = -1;
    cudaDeviceProp prop;
    CK(cudaDeviceGetPCIBusId(id, sizeof id, 0));
    CK(cudaDeviceGetByPCIBusId(&by_id, id));
    CK(cudaDeviceGetPCIBusId(shortid, sizeof shortid, n - 1)); // truncated to the length
    char lastid[32];
    CK(cudaDeviceGetPCIBusId(lastid, sizeof lastid, n - 1));
    CK(cudaDeviceGetByPCIBusId(&last, lastid));
    CK(cudaDeviceGetByPCIBusId(&by_short, "01:00"));
    CK(cudaGetDeviceProperties(&prop, n - 1));
    CK(cudaDeviceGetAttribute(&attr_bus, cudaDevAttrPciBusId, n - 1));
    cudaError_t bad_id = cudaDeviceGetByPCIBusId(&by_id, "zz");
    cudaError_t no_dev = cudaDeviceGetByPCIBusId(&by_id, "0000:7f:00.0");
    cudaError_t bad_dev = cudaDeviceGetPCIBusId(id, sizeof id, n);
    cudaDeviceProp want = {};
    want.major = 7;
    CK(cudaChooseDevice(&chosen, &want));
    cudaError_t choose_null = cudaChooseDevice(&chosen, NULL);
    cudaError_t enable = cudaDeviceEnablePeerAccess(n - 1, 0);
    cudaError_t self = cudaDeviceEnablePeerAccess(0, 0);
    cudaError_t flags = cudaDeviceEnablePeerAccess(n - 1, 1);
    cudaError_t disable = cudaDeviceDisablePeerAccess(n - 1);
    cudaError_t nodev = cudaDeviceEnablePeerAccess(n + 5, 0);
    CK(cudaDeviceGetP2PAttribute(&p2p, cudaDevP2PAttrAccessSupported, 0, n - 1));
    cudaError_t p2p_same = cudaDeviceGetP2PAttribute(&p2p, cudaDevP2PAttrAccessSupported, 0, 0);
    cudaGetLastError();
    printf("pci id=%s by_id=%d short=%s last=%d by_short=%d prop_bus=%d attr_bus=%d bad=%s "
           "none=%s bad_dev=%s chosen=%d choose_null=%s\n", id, by_id, shortid, last,
           by_short, prop.pciBusID, attr_bus, name(bad_id), name(no_dev), name(bad_dev),
           chosen, name(choose_null));
    printf("peer enable=%s self=%s flags=%s disable=%s nodev=%s p2p=%d p2p_same=%s\n",
           name(enable), name(self), name(flags), name(disable), name(nodev), p2p,
           name(p2p_same));
    return 0;
}

static int peer_copies(int n)
{
    const int count = 300000; // more than one staging chunk
    const size_t bytes = count * sizeof(int);
    int *host = (int *)malloc(bytes), *back = (int *)calloc(count, sizeof(int));
    int *a, *b, *far;
    cudaStream_t s;
    for (int i = 0; i < count; i++)
        host[i] = i * 7;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaStreamCreate(&s));
    CK(cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpyPeer(b, 0, a, 0, bytes)); // one device: a device-to-device copy
    CK(cudaMemcpy(back, b, bytes, cudaMemcpyDeviceToHost));
    int same = !memcmp(host, back, bytes);
    CK(cudaSetDevice(n - 1));
    CK(cudaMalloc(&far, bytes));
    CK(cudaSetDevice(0));
    CK(cudaMemcpyPeerAsync(far, n - 1, a, 0, bytes, s)); // through the host
    CK(cudaStreamSynchronize(s));
    memset(back, 0, bytes);
    CK(cudaSetDevice(n - 1));
    CK(cudaMemcpy(back, far, bytes, cudaMemcpyDeviceToHost));
    int across = !memcmp(host, back, bytes);
    CK(cudaFree(far));
    CK(cudaSetDevice(0));
    int dev = -1;
    CK(cudaGetDevice(&dev));
    cudaError_t bad = cudaMemcpyPeer(b, n + 3, a, 0, bytes);
    cudaGetLastError();
    printf("peer_copy same=%d across=%d device_after=%d bad=%s\n", same, across, dev,
           name(bad));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(b));
    free(host);
    free(back);
    return 0;
}

static int functions()
{
    const char *fname = NULL;
    cudaFunction_t fn = NULL;
    size_t off = 0, size = 0;
    enum cudaSharedMemConfig bank;
    CK(cudaFuncGetName(&fname, (const void *)axpb));
    cudaError_t not_kernel = cudaFuncGetName(&fname, (const void *)name);
    CK(cudaGetFuncBySymbol(&fn, (const void *)axpb));
    cudaKernel_t kern = NULL;
    int *v;
    int host_v[4] = {0, 0, 0, 0}, n4 = 4, three = 3, one = 1;
    CK(cudaGetKernel(&kern, (const void *)axpb));
    CK(cudaMalloc(&v, sizeof host_v));
    CK(cudaMemset(v, 0, sizeof host_v));
    void *kargs[] = {&v, &three, &one, &n4};
    CK(cudaLaunchKernel((const void *)kern, dim3(1), dim3(4), kargs, 0, 0)); // by its handle
    CK(cudaMemcpy(host_v, v, sizeof host_v, cudaMemcpyDeviceToHost));
    CK(cudaFree(v));
    cudaError_t no_kernel = cudaGetKernel(&kern, (const void *)name);
    CK(cudaFuncGetParamInfo((const void *)axpb, 1, &off, &size));
    cudaError_t past = cudaFuncGetParamInfo((const void *)axpb, 4, &off, &size);
    CK(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
    CK(cudaDeviceGetSharedMemConfig(&bank));
    cudaError_t bad_bank = cudaDeviceSetSharedMemConfig((cudaSharedMemConfig)9);
    CK(cudaFuncSetSharedMemConfig((const void *)addv, cudaSharedMemBankSizeFourByte));
    void *entry = NULL;
    cudaDriverEntryPointQueryResult st, missing_st;
    CK(cudaGetDriverEntryPoint("cuMemAlloc", &entry, cudaEnableDefault, &st));
    CUdeviceptr d = 0;
    CUresult alloc = ((CUresult(*)(CUdeviceptr *, size_t))entry)(&d, 4096);
    CK(cudaFree((void *)(uintptr_t)d));
    cudaError_t missing = cudaGetDriverEntryPoint("cuNoSuchCall", &entry, 0, &missing_st);
    cudaGetLastError();
    printf("funcs name=%s not_kernel=%s handle=%d kernel=%d,%s param1=%zu,%zu past=%s "
           "bank=%d bad_bank=%s entry=%d,%d missing=%s,%d\n", fname, name(not_kernel),
           fn != NULL, host_v[3], name(no_kernel), off, size, name(past), (int)bank,
           name(bad_bank), (int)st, (int)alloc, name(missing), (int)missing_st);
    return 0;
}

static int stream_attributes()
{
    cudaStream_t s, t;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&t));
    cudaStreamAttrValue v = {}, got = {};
    v.accessPolicyWindow.base_ptr = NULL;
    v.accessPolicyWindow.num_bytes = 0;
    v.accessPolicyWindow.hitRatio = 0.6f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    v.accessPolicyWindow.num_bytes = 1 << 20; // larger than the device's window (0)
    cudaError_t too_big = cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
    cudaStreamAttrValue sync = {};
    sync.syncPolicy = cudaSyncPolicyYield;
    CK(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &sync));
    cudaStreamAttrValue prio = {};
    prio.priority = -1;
    cudaError_t set_prio = cudaStreamSetAttribute(s, cudaStreamAttributePriority, &prio);
    CK(cudaStreamCopyAttributes(t, s));
    CK(cudaStreamGetAttribute(t, cudaStreamAttributeAccessPolicyWindow, &got));
    float ratio = got.accessPolicyWindow.hitRatio;
    CK(cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy, &got));
    int policy = got.syncPolicy;
    CK(cudaCtxResetPersistingL2Cache());
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CK(cudaThreadExchangeStreamCaptureMode(&mode));
    int was = mode;
    CK(cudaThreadExchangeStreamCaptureMode(&mode));
    cudaGetLastError();
    printf("stream_attr too_big=%s priority=%s ratio=%.1f policy=%d mode=%d,%d\n",
           name(too_big), name(set_prio), ratio, policy, was, (int)mode);
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(t));
    return 0;
}

static unsigned long long pool_attr(cudaMemPool_t p, cudaMemPoolAttr a)
{
    unsigned long long v = 0;
    cudaMemPoolGetAttribute(p, a, &v);
    return v;
}

static int pools(int n)
{
    cudaMemPool_t dflt, cur, mine;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaDeviceGetDefaultMemPool(&dflt, 0));
    CK(cudaDeviceGetMemPool(&cur, 0));
    unsigned long long threshold = UINT64_MAX, zero = 0, five = 5;
    CK(cudaMemPoolSetAttribute(dflt, cudaMemPoolAttrReleaseThreshold, &threshold));
    int *x, *y;
    CK(cudaMallocAsync(&x, 1 << 20, s));
    CK(cudaMallocFromPoolAsync(&y, 2 << 20, dflt, s));
    addv<<<4, 256, 0, s>>>(x, x, y, 1024);
    unsigned long long used = pool_attr(dflt, cudaMemPoolAttrUsedMemCurrent);
    CK(cudaFreeAsync(x, s));
    CK(cudaFreeAsync(y, s));
    CK(cudaStreamSynchronize(s));
    unsigned long long after = pool_attr(dflt, cudaMemPoolAttrUsedMemCurrent);
    unsigned long long high = pool_attr(dflt, cudaMemPoolAttrUsedMemHigh);
    CK(cudaMemPoolSetAttribute(dflt, cudaMemPoolAttrUsedMemHigh, &zero));
    unsigned long long reset = pool_attr(dflt, cudaMemPoolAttrUsedMemHigh);
    cudaError_t bad_high = cudaMemPoolSetAttribute(dflt, cudaMemPoolAttrUsedMemHigh, &five);
    cudaError_t read_only = cudaMemPoolSetAttribute(dflt, cudaMemPoolAttrReservedMemCurrent,
                                                    &zero);
    CK(cudaMemPoolTrimTo(dflt, 0));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CK(cudaMemPoolCreate(&mine, &props));
    CK(cudaDeviceSetMemPool(0, mine));
    CK(cudaMallocAsync(&x, 4096, s));
    unsigned long long mine_used = pool_attr(mine, cudaMemPoolAttrUsedMemCurrent);
    CK(cudaFreeAsync(x, s));
    cudaError_t wrong_dev = cudaDeviceSetMemPool(n - 1, mine);
    cudaMemLocation here = {cudaMemLocationTypeDevice, 0}, there = {cudaMemLocationTypeDevice,
                                                                      n - 1};
    cudaMemAccessFlags acc_here, acc_there;
    CK(cudaMemPoolGetAccess(&acc_here, mine, &here));
    CK(cudaMemPoolGetAccess(&acc_there, mine, &there));
    CK(cudaDeviceSetMemPool(0, dflt));
    CK(cudaMemPoolDestroy(mine));
    cudaError_t destroy_default = cudaMemPoolDestroy(dflt);
    props.handleTypes = cudaMemHandleTypeWin32;     /* shared by file descriptors only */
    cudaError_t shareable = cudaMemPoolCreate(&mine, &props);
    cudaGetLastError();
    printf("pools current=%d threshold=%llu used=%llu after=%llu high=%llu reset=%llu "
           "bad_high=%s read_only=%s mine=%llu wrong_dev=%s access=%d,%d destroy_default=%s "
           "shareable=%s\n", cur == dflt, pool_attr(dflt, cudaMemPoolAttrReleaseThreshold)
           == UINT64_MAX, used, after, high, reset, name(bad_high), name(read_only),
           mine_used, name(wrong_dev), (int)acc_here, (int)acc_there, name(destroy_default),
           name(shareable));
    CK(cudaStreamDestroy(s));
    return 0;
}

// libcuda keeps a destroyed array's record (a stale handle then reads as invalid): held here
// so that LeakSanitizer sees it reachable.
static cudaArray_t arr;

static int arrays_and_host()
{
    cudaChannelFormatDesc want = cudaCreateChannelDesc<float>(), got = {};
    CK(cudaMallocArray(&arr, &want, 16, 16));
    CK(cudaGetChannelDesc(&got, arr));
    cudaError_t null_desc = cudaGetChannelDesc(NULL, arr);
    CK(cudaFreeArray(arr));
    // cudaMalloc3DArray of a 2D array (depth 0), filled and read by cudaMemcpy3D
    static float img[4][8], part[2][4];
    static cudaArray_t a2;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++)
            img[r][c] = r * 10.0f + c;
    CK(cudaMalloc3DArray(&a2, &want, make_cudaExtent(8, 4, 0), 0));
    cudaMemcpy3DParms in = {}, outp = {};
    in.srcPtr = make_cudaPitchedPtr(img, 8 * sizeof(float), 8, 4);
    in.dstArray = a2;
    in.extent = make_cudaExtent(8, 4, 1); // elements of the array
    in.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&in));
    outp.srcArray = a2;
    outp.srcPos = make_cudaPos(2, 1, 0); // element (2, 1)
    outp.dstPtr = make_cudaPitchedPtr(part, 4 * sizeof(float), 4, 2);
    outp.extent = make_cudaExtent(4, 2, 1);
    outp.kind = cudaMemcpyDeviceToHost;
    CK(cudaMemcpy3D(&outp));
    cudaExtent ext;
    cudaChannelFormatDesc d2;
    unsigned aflags;
    CK(cudaArrayGetInfo(&d2, &ext, &aflags, a2));
    outp.extent.depth = 2;
    cudaError_t two_slices = cudaMemcpy3D(&outp);
    cudaArray_t a3;
    cudaError_t deep = cudaMalloc3DArray(&a3, &want, make_cudaExtent(8, 4, 2), 0);
    if (deep == cudaSuccess)
        CK(cudaFreeArray(a3));
    // a layered array of no layers
    cudaError_t layered = cudaMalloc3DArray(&a3, &want, make_cudaExtent(8, 4, 0),
                                            cudaArrayLayered);
    CK(cudaFreeArray(a2));
    cudaGetLastError();
    printf("array3d part=%g,%g,%g extent=%zu,%zu,%zu two_slices=%s deep=%s layered=%s\n",
           part[0][0], part[0][3], part[1][3], ext.width, ext.height, ext.depth,
           name(two_slices), name(deep), name(layered));

    void *pinned;
    unsigned flags = 0;
    CK(cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault));
    CK(cudaHostGetFlags(&flags, pinned));
    int plain;
    cudaError_t not_pinned = cudaHostGetFlags(&flags, &plain);
    CK(cudaFreeHost(pinned));
    cudaGetLastError();
    printf("misc channel=%d,%d,%d null=%s host_flags=%u not_pinned=%s\n", got.x, got.y,
           (int)got.f, name(null_desc), flags, name(not_pinned));
    return 0;
}

int main()
{
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
        printf("needs two devices, has %d\n", n);
        return 1;
    }
    return pci_and_peers(n) || peer_copies(n) || functions() || stream_attributes() || pools(n)
           || arrays_and_host();
}
