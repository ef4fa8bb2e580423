/* The linked-module image (libgdev/linkimage.py holds the layout): several PTX texts that the
 * daemon links into one module, as nvlink links relocatable device code.  cuLinkComplete
 * builds one from its inputs; cuModuleLoadData (and every loader that takes an image) passes
 * it to the daemon whole, its size read from its header since those calls take none. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define MAGIC "GDEVLNK1"
#define HEADER_SIZE 24
#define INPUT_SIZE 16

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static void put32(char *p, uint32_t v)
{
    memcpy(p, &v, 4); /* little-endian hosts only, as the whole ABI */
}

static void put64(char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

int cu_is_linked_image(const void *image)
{
    /* strnlen first: a shorter NUL-terminated PTX text is never read past its end */
    return image && strnlen(image, 8) == 8 && !memcmp(image, MAGIC, 8);
}

size_t cu_linked_image_size(const void *image)
{
    uint64_t total;
    memcpy(&total, (const char *)image + 16, 8);
    return (size_t)total;
}

/* A name the daemon takes: at most CU_LINK_NAME_MAX bytes of printable ASCII. */
static size_t clean_name(const char *name, char *out)
{
    size_t n = 0;
    for (; name && name[n] && n < CU_LINK_NAME_MAX; n++)
        out[n] = name[n] >= 0x20 && name[n] < 0x7f ? name[n] : '?';
    return n;
}

CUresult cu_linked_image(size_t n, char *const *names, char *const *texts, char **out,
                         size_t *size)
{
    size_t total = HEADER_SIZE;
    char name[CU_LINK_NAME_MAX];
    for (size_t i = 0; i < n; i++)
        total += pad8(INPUT_SIZE + clean_name(names[i], name) + strlen(texts[i]));
    char *img = calloc(1, total), *p = img + HEADER_SIZE;
    if (!img)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(img, MAGIC, 8);
    put32(img + 8, (uint32_t)n);
    put64(img + 16, total);
    for (size_t i = 0; i < n; i++) {
        size_t nl = clean_name(names[i], name), tl = strlen(texts[i]);
        put32(p, (uint32_t)nl);
        put64(p + 8, tl);
        memcpy(p + INPUT_SIZE, name, nl);
        memcpy(p + INPUT_SIZE + nl, texts[i], tl);
        p += pad8(INPUT_SIZE + nl + tl);
    }
    *out = img;
    *size = total;
    return CUDA_SUCCESS;
}
