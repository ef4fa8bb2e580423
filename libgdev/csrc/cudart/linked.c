/* Programs built with relocatable device code (nvcc -rdc=true, CMake's
 * CUDA_SEPARABLE_COMPILATION): nvcc's device-link stub registers one fatbinary wrapper of
 * version 2 whose second field lists every translation unit's own fatbinary ("prelinked"),
 * then each unit registers its kernels and variables with that one handle.  NVIDIA's runtime
 * links the units' device code; here each unit's PTX goes to libcuda's JIT linker
 * (cuLinkAddData of the unit's fatbinary), whose image the daemon links into one module
 * (gdevd/gpu/ptx/unitlink.py), so a kernel or variable registered by any unit resolves in it.
 *
 * A unit libcuda refuses as machine code for this device (CUDA_ERROR_NO_BINARY_FOR_GPU) is
 * left out: the CUDA device runtime that nvcc links into every -rdc program carries machine
 * code and PTX only for newer GPUs, and the daemon's engine provides the device-runtime
 * calls of dynamic parallelism itself (the units' __cudaCDP2* references resolve to its
 * builtins: gdevd/gpu/ptx/devrt.py).  When every unit is
 * refused (a program built with machine code only) the load fails with libcuda's reason. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudart_internal.h"

#define LINK_VERSION 2 /* __fatBinC_Wrapper_t.version of a device-linked program */

struct wrapper {
    int magic, version;
    const void *data;
    void *prelinked; /* version 2: NULL-terminated array of the units' fatbinaries */
};

const void *const *rt_prelinked(const void *wrapper)
{
    const struct wrapper *w = wrapper;
    return w && w->version == LINK_VERSION ? w->prelinked : NULL;
}

/* The size of a fatbinary from its header (magic u32, version u16, header size u16, size u64). */
static size_t fatbin_size(const void *fb)
{
    uint16_t header;
    uint64_t size;
    memcpy(&header, (const char *)fb + 6, sizeof header);
    memcpy(&size, (const char *)fb + 8, sizeof size);
    return header + (size_t)size;
}

static CUresult add_units(CUlinkState st, const void *const *units, int *added)
{
    char name[32];
    CUresult first = CUDA_SUCCESS;
    for (int i = 0; units[i]; i++) {
        snprintf(name, sizeof name, "unit%d", i);
        CUresult r = cuLinkAddData(st, CU_JIT_INPUT_FATBINARY, (void *)units[i],
                                   fatbin_size(units[i]), name, 0, NULL, NULL);
        if (r == CUDA_SUCCESS)
            ++*added;
        else if (r != CUDA_ERROR_NO_BINARY_FOR_GPU)
            return r;
        else if (!first)
            first = r;
    }
    return *added ? CUDA_SUCCESS : first ? first : CUDA_ERROR_NO_BINARY_FOR_GPU;
}

cudaError_t rt_load_linked(const void *const *units, CUmodule *mod)
{
    CUlinkState st;
    void *image;
    size_t size;
    int added = 0;
    CUresult r = cuLinkCreate(0, NULL, NULL, &st);
    if (r)
        return rt_from(r);
    if (!(r = add_units(st, units, &added)) && !(r = cuLinkComplete(st, &image, &size)))
        r = cuModuleLoadData(mod, image);
    cuLinkDestroy(st);
    return r ? rt_from(r) : cudaSuccess;
}
