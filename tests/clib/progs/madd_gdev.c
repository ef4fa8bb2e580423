/* madd through gdev.h, Gdev's test/cuda-style matrix addition written against the Gdev API:
 * upload the module's PTX, allocate a, b, c, copy in, launch `add`, copy out, check on the
 * CPU.  Usage: madd_gdev PTX N [pinned].  Exit 0 and "madd ok" on success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdev.h"

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        return NULL;
    buf = malloc((size_t)n);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

#define CHECK(cond, what)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "madd: %s failed: %s\n", what, gdev_last_error());      \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    size_t code_size = 0;
    char *code = argc > 2 ? read_file(argv[1], &code_size) : NULL;
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    int use_pinned = argc > 3 && !strcmp(argv[3], "pinned");
    uint64_t bytes = (uint64_t)n * n * sizeof(unsigned), mem;
    uint32_t id;

    if (!code || !n) {
        fprintf(stderr, "usage: madd_gdev PTX N [pinned]\n");
        return 2;
    }
    Ghandle h = gopen(0);
    CHECK(h, "gopen");
    CHECK(gquery(h, GDEV_QUERY_DEVICE_MEM_SIZE, &mem) == 0, "gquery");
    unsigned *a, *b, *c;
    if (use_pinned) {
        a = gmalloc_dma(h, bytes);
        b = gmalloc_dma(h, bytes);
        c = gmalloc_dma(h, bytes);
        CHECK(a && b && c, "gmalloc_dma");
    } else {
        a = malloc(bytes);
        b = malloc(bytes);
        c = malloc(bytes);
    }
    for (unsigned i = 0; i < n * n; i++) {
        a[i] = i * 7u + 1u;
        b[i] = i ^ 0x5a5a5a5au;
        c[i] = 0;
    }
    uint64_t code_addr = gmalloc(h, code_size);
    uint64_t da = gmalloc(h, bytes), db = gmalloc(h, bytes), dc = gmalloc(h, bytes);
    CHECK(code_addr && da && db && dc, "gmalloc");
    CHECK(gmemcpy_to_device(h, code_addr, code, code_size) == 0, "upload PTX");
    CHECK(gmemcpy_to_device(h, da, a, bytes) == 0, "gmemcpy_to_device a");
    CHECK(gmemcpy_to_device(h, db, b, bytes) == 0, "gmemcpy_to_device b");

    uint8_t params[28]; /* .param .u64 a, b, c at 0, 8, 16; .param .u32 n at 24 */
    memcpy(params, &da, 8);
    memcpy(params + 8, &db, 8);
    memcpy(params + 16, &dc, 8);
    memcpy(params + 24, &n, 4);
    struct gdev_kernel k = {
        .code_addr = code_addr, .code_size = code_size, .name = "add",
        .param_buf = params, .param_size = sizeof params,
        .grid_x = (n + 15) / 16, .grid_y = (n + 15) / 16, .grid_z = 1,
        .block_x = 16, .block_y = 16, .block_z = 1,
    };
    CHECK(glaunch(h, &k, &id) == 0, "glaunch");
    CHECK(gsync(h, id, NULL) == 0, "gsync");
    CHECK(gmemcpy_from_device(h, c, dc, bytes) == 0, "gmemcpy_from_device");
    for (unsigned i = 0; i < n * n; i++)
        if (c[i] != a[i] + b[i]) {
            fprintf(stderr, "madd: c[%u] = %u, want %u\n", i, c[i], a[i] + b[i]);
            return 1;
        }
    CHECK(gfree(h, da) >= bytes && gfree(h, db) >= bytes && gfree(h, dc) >= bytes, "gfree");
    if (use_pinned)
        CHECK(gfree_dma(h, a) >= bytes && gfree_dma(h, b) >= bytes && gfree_dma(h, c) >= bytes,
              "gfree_dma");
    else {
        free(a);
        free(b);
        free(c);
    }
    free(code);
    CHECK(gclose(h) == 0, "gclose");
    printf("madd ok n=%u mem=%llu\n", n, (unsigned long long)mem);
    return 0;
}
