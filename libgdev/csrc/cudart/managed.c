/* __managed__ variables.  The kernels' copy is the module's global in device memory, where
 * the PTX names it; the host's copy is a buffer of the runtime that nvcc's host code reaches
 * through *hostVarPtrAddress.  The runtime keeps them one at the points where CUDA lets each
 * side touch managed memory (devices without concurrent managed access): before a launch
 * the host's values go to the device, unless a kernel ran since the last synchronization (then
 * the device's are the newer ones); at the first synchronization after a launch
 * (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, a blocking copy) the
 * device's come back.  One device: the current one when the variable is first used. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

struct rt_managed {
    void **host_ptr; /* nvcc's pointer variable: set to `host` once bound */
    char *name;
    size_t size;
    struct rt_fatbin *fatbin;
    void *host;
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
    if (!v || !(v->host = calloc(1, size ? size : 1)) || !(v->name = strdup(deviceName))) {
        free(v ? v->host : NULL);
        free(v);
        return; /* the variable stays unbound: its first use fails to initialize */
    }
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

/* Bind v (lock held): its module loaded, its device address, the host's copy its initial
 * value, nvcc's pointer set. */
static cudaError_t bind(struct rt_managed *v)
{
    CUmodule mod;
    size_t size;
    cudaError_t e = rt_module(v->fatbin, &mod);
    if (e)
        return e;
    if (cuModuleGetGlobal(&v->dev, &size, mod, v->name) || size < v->size)
        return cudaErrorInvalidSymbol;
    if (cuMemcpyDtoH(v->host, v->dev, v->size))
        return cudaErrorUnknown;
    *v->host_ptr = v->host;
    return cudaSuccess;
}

/* nvcc's host code calls this before its first use of a __managed__ variable. */
API char __cudaInitModule(void **handle)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars && !e; i++)
        if (vars[i]->fatbin == (struct rt_fatbin *)handle && !vars[i]->dev)
            e = bind(vars[i]);
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
            e = bind(v);
        else if (!device_newer && cuMemcpyHtoD(v->dev, v->host, v->size))
            e = cudaErrorUnknown;
    }
    if (nvars)
        device_newer = 1;
    pthread_mutex_unlock(&lock);
    return e;
}

void rt_managed_pull(void)
{
    pthread_mutex_lock(&lock);
    if (device_newer)
        for (size_t i = 0; i < nvars; i++)
            if (vars[i]->dev)
                cuMemcpyDtoH(vars[i]->host, vars[i]->dev, vars[i]->size);
    device_newer = 0;
    pthread_mutex_unlock(&lock);
}

void rt_managed_forget(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nvars; i++)
        vars[i]->dev = 0;
    device_newer = 0;
    pthread_mutex_unlock(&lock);
}
