/* Names and ids: a kernel's name, and each device's PCI address.  The emulated devices sit on
 * PCI domain 0, device 0, function 0, device N on bus N + 1 (so every vGPU has its own
 * address, and CU_DEVICE_ATTRIBUTE_PCI_BUS_ID says the same, device.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

API CUresult cuFuncGetName(const char **name, CUfunction f)
{
    const struct gdev_function *k = cu_kernel_info((CUkernel)(void *)f, NULL);
    if (k && name) { /* a CUkernel, as CUDA allows */
        *name = k->name;
        return CUDA_SUCCESS;
    }
    if (!name || !f || !f->info)
        return CUDA_ERROR_INVALID_VALUE;
    *name = f->info->name;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
    char buf[16];
    int bus = 0;
    CUresult r = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    if (r)
        return r;
    if (!id || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, sizeof buf, "0000:%02x:00.0", (unsigned)bus & 0xff);
    snprintf(id, (size_t)len, "%s", buf); /* truncated to len, as CUDA does */
    return CUDA_SUCCESS;
}

/* "domain:bus:device.function", "domain:bus:device" or "bus:device", hexadecimal. */
static int parse_pci(const char *id, unsigned *domain, unsigned *bus, unsigned *device)
{
    unsigned fn = 0;
    char tail;
    *domain = 0;
    if (sscanf(id, "%x:%x:%x.%x%c", domain, bus, device, &fn, &tail) == 4
        || sscanf(id, "%x:%x:%x%c", domain, bus, device, &tail) == 3)
        return fn == 0;
    *domain = 0;
    return sscanf(id, "%x:%x%c", bus, device, &tail) == 2;
}

API CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
    unsigned domain, bus, device;
    int n = 0, b;
    if (!dev || !id || !parse_pci(id, &domain, &bus, &device))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuDeviceGetCount(&n);
    for (int i = 0; !r && i < n; i++)
        if (!cuDeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i) && domain == 0
            && device == 0 && bus == (unsigned)b) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    return r ? r : CUDA_ERROR_INVALID_DEVICE;
}
