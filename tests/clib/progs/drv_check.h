/* Helpers of the driver-API test programs: CK(call), a call that must succeed (otherwise its
 * error name on stderr and return 1), EXPECT(cond), and slurp(), a whole file as a
 * NUL-terminated string. */
#ifndef DRV_CHECK_H
#define DRV_CHECK_H
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                       \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char *name_;                                                         \
            cuGetErrorName(r_, &name_);                                                \
            fprintf(stderr, "%s: %s: %s\n", __FILE__, #call, name_);                   \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* EXPECT(cond), a condition that must hold (otherwise its line on stderr and return 1). */
#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                 \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* The file at path, NUL-terminated (its size in *n if n), or NULL. */
static __attribute__((unused)) char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long size = -1;
    if (f && !fseek(f, 0, SEEK_END) && (size = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)
        && (buf = calloc(1, (size_t)size + 1)) && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    if (buf && n)
        *n = size;
    return buf;
}

#endif
