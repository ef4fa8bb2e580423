/* __managed__ variables.  The kernels' copy is the module's global in device memory, where
 * the PTX names it; the host's copy, which nvcc's host code reaches through
 * *hostVarPtrAddress, is managed memory (one block per module, mapped in this process at its
 * own GPU address), so `&var` taken on the host is a pointer kernels can use too, as in CUDA.
 * The runtime keeps the two copies one at the points where CUDA lets each side touch managed
 * memory (devices without concurrent managed access): before a launch the host's values go to
 * the global, unless a kernel ran since the last synchronization (then the device's are the
 * newer ones); at the first synchronization after a launch (cudaDeviceSynchronize,
 * cudaStreamSynchronize, cudaEventSynchronize, a blocking copy) the bytes the kernels changed
 * in the global come back, and those they changed through the pointer stay.  One device: the
 * current one when the variable is first used.  Where no managed memory is left the host's
 * copy is a plain buffer (the variable works by name; its host address is not the kernels'). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

#define ALIGN 16u

struct rt_managed {
    void **host_ptr; /* nvcc's pointer variable: set to `host` once bound */
    char *name;
    size_t size;
    struct rt_fatbin *fatbin;
    void *host;      /* in its module's managed block once bound, else `heap` */
    void *heap;      /* the plain buffer: before the first bind and after a reset */
    void *pushed;    /* the values last sent to the global (what a pull compares with) */
    void *fresh;     /* where a pull reads the global, in one copy */
    CUdeviceptr dev; /* 0 until bound (again after cudaDeviceReset) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_managed **vars;
static size_t nvars;
static int device_newer; /* a kernel was launched since the last pull */

API void __cudaRegisterManagedVar(void **handle, void **hostVarPtrAddress, char *deviceAddress,
                                  const char *deviceName, int ext, size_t size, int constant,
                                  int global)
{
    struct rt_managed *v = calloc(1, sizeof *v);
    (void)deviceAddress, (void)ext, (void)constant, (void)global;
    if (!v || !(v->heap = calloc(1, size ? size : 1)) ||
        !(v->pushed = calloc(1, size ? size : 1)) || !(v->fresh = calloc(1, size ? size : 1)) ||
        !(v->name = strdup(deviceName))) {
        if (v)
            free(v->heap), free(v->pushed), free(v->fresh);
        free(v);
        return; /* the variable stays unbound: its first use fails to initialize */
    }
    v->host = v->heap;
    v->host_ptr = hostVarPtrAddress;
    v->size = size;
    v->fatbin = (struct rt_fatbin *)handle;
    pthread_mutex_lock(&lock);
    if (!(nvars & (nvars - 1))) {
        struct rt_managed **g = realloc(vars, (nvars ? 2 * nvars : 1) * sizeof *g);
        if (!g) {
            pthread_mutex_unlock(&lock);
            return;
        }
        vars = g;
    }
    vars[nvars++] = v;
    pthread_mutex_unlock(&lock);
}

/* Bind v (lock held): its module loaded, its device address, its initial value in the
 * host's copy at `host` (managed memory, or the plain buffer), nvcc's pointer set. */
static cudaError_t bind(struct rt_managed *v, char *host)
{
    CUmodule mod;
    size_t size;
    cudaError_t e = rt_module(v->fatbin, &mod);
    if (e)
        return e;
    if (cuModuleGetGlobal(&v->dev, &size, mod, v->name) || size < v->size) {
        v->dev = 0;
        return cudaErrorInvalidSymbol;
    }
    if (cuMemcpyDtoH(host, v->dev, v->size)) {
        v->dev = 0;
        return cudaErrorUnknown;
    }
    memcpy(v->pushed, host, v->size);
    v->host = host;
    *v->host_ptr = host;
    return cudaSuccess;
}

/* Bind the unbound variables of v's module (lock held), their host copies in one block of
 * managed memory (one pinned buffer however many there are), else each in its plain buffer. */
static cudaError_t bind_module(struct rt_managed *v)
{
    CUmodule mod;
    cudaError_t e = rt_module(v->fatbin, &mod); /* the context the block belongs to */
    if (e)
        return e;
    size_t total = 0;
    for (size_t i = 0; i < nvars; i++)
        if (vars[i]->fatbin == v->fatbin && !vars[i]->dev)
            total += (vars[i]->size + ALIGN - 1) / ALIGN * ALIGN;
    CUdeviceptr block = 0;
    if (total && cuMemAllocManaged(&block, total, CU_MEM_ATTACH_GLOBAL))
        block = 0;
    char *at = (char *)(uintptr_t)block;
    for (size_t i = 0; i < nvars && !e; i++) {
        struct rt_managed *w = vars[i];
        if (w->fatbin != v->fatbin || w->dev)
            continue;
        e = bind(w, at ? at : w->heap);
        if (at)
            at += (w->size + ALIGN - 1) / ALIGN * ALIGN;
    }
    return e;
}

/* nvcc's host code calls this before its first use of a __managed__ variable. */
API char __cudaInitModule(void **handle)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars && !e; i++)
        if (vars[i]->fatbin == (struct rt_fatbin *)handle && !vars[i]->dev)
            e = bind_module(vars[i]);
    pthread_mutex_unlock(&lock);
    return e == cudaSuccess;
}

cudaError_t rt_managed_push(void)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars && !e; i++) {
        struct rt_managed *v = vars[i];
        if (!v->dev)
            e = bind_module(v);
        else if (!device_newer) {
            if (cuMemcpyHtoD(v->dev, v->host, v->size))
                e = cudaErrorUnknown;
            memcpy(v->pushed, v->host, v->size);
        }
    }
    if (nvars)
        device_newer = 1;
    pthread_mutex_unlock(&lock);
    return e;
}

/* The bytes of v's global that kernels changed since the push, into the host's copy (lock
 * held); the others keep what kernels wrote through the host's pointer. */
static void pull(struct rt_managed *v)
{
    if (cuMemcpyDtoH(v->fresh, v->dev, v->size))
        return;
    unsigned char *now = v->fresh, *host = v->host, *was = v->pushed;
    for (size_t i = 0; i < v->size; i++)
        if (now[i] != was[i])
            host[i] = was[i] = now[i];
}

void rt_managed_pull(void)
{
    pthread_mutex_lock(&lock);
    if (device_newer)
        for (size_t i = 0; i < nvars; i++)
            if (vars[i]->dev)
                pull(vars[i]);
    device_newer = 0;
    pthread_mutex_unlock(&lock);
}

void rt_managed_forget(void)
{
    /* the managed blocks go with the context: the host keeps the values in the plain
     * buffers, nvcc's pointers turned to them */
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars; i++) {
        struct rt_managed *v = vars[i];
        if (v->host != v->heap)
            memcpy(v->heap, v->host, v->size);
        v->host = v->heap;
        if (v->dev)
            *v->host_ptr = v->heap;
        v->dev = 0;
    }
    device_newer = 0;
    pthread_mutex_unlock(&lock);
}
