/* Module images: PTX text as is, or the PTX inside an nvcc fatbinary (plain or wrapped in
 * the __cudaFatBinaryWrapper nvcc emits), decompressed when nvcc compressed it (zstd in
 * CUDA 13, LZ4 before; the system's libzstd.so.1/liblz4.so.1 are loaded on demand), or a
 * linked-module image (linkimage.c) passed whole.  An image with machine code only is
 * CUDA_ERROR_NO_BINARY_FOR_GPU: the emulated GPU runs PTX. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xba55ed50u
#define KIND_PTX 1
#define FLAG_LZ4 0x2000u
#define FLAG_ZSTD 0x8000u

struct fatbin_header {
    uint32_t magic;
    uint16_t version, header_size;
    uint64_t fat_size;
};

struct fatbin_entry {
    uint16_t kind, unknown0;
    uint32_t header_size;
    uint64_t size;
    uint32_t compressed_size, unknown1;
    uint16_t minor, major;
    uint32_t arch;
    uint32_t name_offset, name_len;
    uint64_t flags, zero;
    uint64_t uncompressed_size;
};

#define WRAPPER_LINKED 2 /* the version of a device-linked program's wrapper (nvcc -rdc) */

struct fatbin_wrapper {
    uint32_t magic, version;
    const void *data;
    const void *const *prelinked; /* WRAPPER_LINKED: the units' fatbinaries, NULL-ended */
};

static CUresult decompress(const struct fatbin_entry *e, const uint8_t *src, char **out,
                           size_t *len)
{
    const char *lib = e->flags & FLAG_ZSTD ? "libzstd.so.1" : "liblz4.so.1";
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    size_t cap = e->uncompressed_size;
    char *dst = malloc(cap + 1);
    long n = -1;

    if (dl && dst && (e->flags & FLAG_ZSTD)) {
        size_t (*dec)(void *, size_t, const void *, size_t) =
            (size_t (*)(void *, size_t, const void *, size_t))dlsym(dl, "ZSTD_decompress");
        unsigned (*is_err)(size_t) = (unsigned (*)(size_t))dlsym(dl, "ZSTD_isError");
        size_t r = dec && is_err ? dec(dst, cap, src, e->compressed_size) : 0;
        n = dec && is_err && !is_err(r) ? (long)r : -1;
    } else if (dl && dst) {
        int (*dec)(const char *, char *, int, int) =
            (int (*)(const char *, char *, int, int))dlsym(dl, "LZ4_decompress_safe");
        n = dec ? dec((const char *)src, dst, (int)e->compressed_size, (int)cap) : -1;
    }
    if (dl)
        dlclose(dl);
    if (n < 0) {
        free(dst);
        return cu_fail(CUDA_ERROR_INVALID_IMAGE,
                       "compressed PTX in the fatbinary and %s could not decompress it: "
                       "build with nvcc --no-compress (or -Xfatbin=-compress-all=false)", lib);
    }
    dst[n] = '\0';
    *out = dst;
    *len = (size_t)n;
    return CUDA_SUCCESS;
}

/* The newest PTX entry of a fatbinary. */
static CUresult fatbin_ptx(const uint8_t *fb, const char **ptx, size_t *len, char **owned)
{
    const struct fatbin_header *h = (const void *)fb;
    const uint8_t *p = fb + h->header_size, *end = p + h->fat_size;
    const struct fatbin_entry *best = NULL;
    int machine_code = 0;

    while (p + sizeof(struct fatbin_entry) <= end) {
        const struct fatbin_entry *e = (const void *)p;
        if (e->header_size < sizeof *e || e->size > (uint64_t)(end - p))
            return cu_fail(CUDA_ERROR_INVALID_IMAGE, "fatbinary entry out of bounds");
        if (e->kind == KIND_PTX && (!best || e->arch > best->arch))
            best = e;
        else
            machine_code = 1;
        p += e->header_size + e->size;
    }
    if (!best)
        return cu_fail(machine_code ? CUDA_ERROR_NO_BINARY_FOR_GPU : CUDA_ERROR_INVALID_IMAGE,
                       "the fatbinary carries no PTX (machine code only): the emulated GPU "
                       "runs PTX; build with -gencode arch=compute_75,code=compute_75 "
                       "(or any code=compute_XX)");
    const uint8_t *payload = (const uint8_t *)best + best->header_size;
    if (best->flags & (FLAG_LZ4 | FLAG_ZSTD)) {
        CUresult r = decompress(best, payload, owned, len);
        *ptx = *owned;
        return r;
    }
    *ptx = (const char *)payload;
    *len = strnlen(*ptx, best->size);
    return CUDA_SUCCESS;
}

int cu_fatbin_sass_only_for(const void *image, int cc)
{
    const uint8_t *fb = image;
    uint32_t magic;
    int sass = 0, ptx = 0;
    if (!image || strnlen(image, sizeof magic) < sizeof magic)
        return 0;
    memcpy(&magic, fb, sizeof magic);
    if (magic == FATBIN_WRAPPER_MAGIC)
        fb = ((const struct fatbin_wrapper *)image)->data;
    else if (magic != FATBIN_MAGIC)
        return 0;
    const struct fatbin_header *h = (const void *)fb;
    const uint8_t *p = fb + h->header_size, *end = p + h->fat_size;
    while (p + sizeof(struct fatbin_entry) <= end) {
        const struct fatbin_entry *e = (const void *)p;
        if (e->header_size < sizeof *e || e->size > (uint64_t)(end - p))
            return 0;
        if (e->kind == KIND_PTX)
            ptx |= (int)e->arch <= cc;
        else
            sass |= (int)e->arch <= cc;
        p += e->header_size + e->size;
    }
    return sass && !ptx;
}

CUresult cu_image_to_ptx(const void *image, const char **ptx, size_t *len, char **owned)
{
    const uint8_t *b = image;
    uint32_t magic;

    *owned = NULL;
    if (!image)
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "no image");
    if (strnlen(image, sizeof magic) < sizeof magic) { /* a short text: no magic to read */
        *ptx = image;
        *len = strlen(*ptx);
        return CUDA_SUCCESS;
    }
    memcpy(&magic, b, sizeof magic);
    const struct fatbin_wrapper *w = image;
    if (magic == FATBIN_WRAPPER_MAGIC && w->version == WRAPPER_LINKED && w->prelinked) {
        CUresult r = cu_prelinked_image(w->prelinked, owned, len);
        *ptx = *owned;
        return r;
    }
    if (magic == FATBIN_WRAPPER_MAGIC)
        return fatbin_ptx(w->data, ptx, len, owned);
    if (magic == FATBIN_MAGIC)
        return fatbin_ptx(b, ptx, len, owned);
    if (cu_is_linked_image(image)) { /* passed whole: the daemon links its inputs */
        *ptx = image;
        *len = cu_linked_image_size(image);
        return CUDA_SUCCESS;
    }
    if (!memcmp(b, "\177ELF", 4))
        return cu_fail(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       "a cubin (ELF machine code) cannot run on the emulated GPU: build "
                       "with PTX (nvcc -ptx, or -gencode arch=compute_XX,code=compute_XX)");
    *ptx = image; /* PTX text, NUL-terminated as cuModuleLoadData requires */
    *len = strlen(*ptx);
    return CUDA_SUCCESS;
}
