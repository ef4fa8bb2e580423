/* cuGetExportTable: the driver's private tables that NVIDIA's static runtime
 * (libcudart_static.a, nvcc's default) asks for by UUID before its first call.  Each table is
 * an array of words: most begin with their own size in bytes, then function pointers at
 * fixed slots.  The slots filled here are those the CUDA 13 runtime calls; what each does was
 * learnt from the runtime's calls (and ZLUDA's notes on them).  A slot the runtime might call
 * that gdev does not fill says so once on stderr and fails, never jumps through NULL.
 * Tables not listed (the runtime also asks for one, {f8cff951-...}, that it does without)
 * are CUDA_ERROR_NOT_SUPPORTED. */
#include <string.h>

#include "cuda_internal.h"

#define SLOTS 16

/* ---- the runtime's interface: modules from fatbinaries, primary contexts --------------- */

static CUresult module_from_fatbin(CUmodule *mod, const void *wrapper)
{
    return cuModuleLoadData(mod, wrapper); /* fatbin.c takes the wrapper as NVIDIA's does */
}

static CUresult module_from_fatbin_ext(CUmodule *mod, const void *wrapper, void *a, void *b,
                                       unsigned n)
{
    if (a || b || n)
        return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "module load with options from the static "
                       "runtime: build the program with nvcc -cudart shared");
    return cuModuleLoadData(mod, wrapper);
}

static CUresult module_from_fatbin_header(const void *header, CUmodule *mod, void *a, void *b,
                                          unsigned n)
{
    return module_from_fatbin_ext(mod, header, a, b, n);
}

static void runtime_notice(size_t arg)
{
    (void)arg; /* a notification of the runtime's that needs nothing of the driver */
}

static CUresult load_compilers(void)
{
    return CUDA_SUCCESS; /* PTX is what gdevd runs: there is no compiler to load */
}

/* ---- tools hooks: buffers the runtime writes its callback state into ------------------- */

static uint32_t hooks_a[1024], hooks_b[16];

static void hooks_buffer_a(void **p, size_t *n)
{
    *p = hooks_a;
    *n = sizeof hooks_a / sizeof hooks_a[0];
}

static void hooks_buffer_b(void **p, size_t *n)
{
    *p = hooks_b;
    *n = 14; /* what the runtime expects; the array is larger */
}

/* ---- context checks, context creation, the integrity check ----------------------------- */

static CUresult context_check(CUcontext ctx, uint32_t *flags, void **info)
{
    (void)ctx, (void)info;
    if (flags)
        *flags = 0; /* no special state: an ordinary context */
    return CUDA_SUCCESS;
}

static uint32_t context_check_flags(void)
{
    return 0;
}

static CUresult ctx_create_bypass(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
    return cuCtxCreate_v2(pctx, flags, dev);
}

static CUresult integrity_check(uint32_t version, uint64_t seconds, uint64_t *out);

/* ---- unfilled slots -------------------------------------------------------------------- */

#define UNFILLED(table)                                                                   \
    static CUresult unfilled_##table(void)                                               \
    {                                                                                    \
        static int said;                                                                 \
        cu_notice(&said, "NVIDIA's static runtime called a driver-internal function of " \
                  "its " #table " table that gdev does not provide: if the program "     \
                  "fails, rebuild it with nvcc -cudart shared");                         \
        return CUDA_ERROR_NOT_SUPPORTED;                                                 \
    }
UNFILLED(runtime)
UNFILLED(hooks)
UNFILLED(checks)
UNFILLED(integrity)

#define FN(f) ((const void *)(f))
#define SIZE(n) ((const void *)(uintptr_t)((n) * sizeof(void *)))
#define FILL(t, u) \
    do { for (int i_ = 1; i_ < SLOTS; i_++) if (!(t)[i_]) (t)[i_] = FN(u); } while (0)

static const void *runtime_table[SLOTS] = {
    SIZE(13), FN(module_from_fatbin), FN(cu_primary_handle), [6] = FN(module_from_fatbin_ext),
    [7] = FN(runtime_notice), [8] = FN(module_from_fatbin_header), [12] = FN(load_compilers)};
static const void *hooks_table[SLOTS] = {SIZE(7), [2] = FN(hooks_buffer_a),
                                         [6] = FN(hooks_buffer_b)};
static const void *tls_table[4] = {SIZE(4)}; /* the runtime reads only its size */
static const void *cls_table[4] = {FN(cu_cls_put), FN(cu_cls_delete), FN(cu_cls_get)};
static const void *checks_table[SLOTS] = {SIZE(4), [2] = FN(context_check),
                                          [3] = FN(context_check_flags)};
static const void *bypass_table[2] = {SIZE(2), FN(ctx_create_bypass)};
static const void *integrity_table[SLOTS] = {SIZE(3), FN(integrity_check)};

static CUresult integrity_check(uint32_t version, uint64_t seconds, uint64_t *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    cu_integrity_hash(version, seconds, runtime_table, integrity_table,
                      integrity_table[1], out);
    return CUDA_SUCCESS;
}

static pthread_once_t filled = PTHREAD_ONCE_INIT;

static void fill_unfilled(void)
{
    FILL(runtime_table, unfilled_runtime);
    FILL(hooks_table, unfilled_hooks);
    FILL(checks_table, unfilled_checks);
    FILL(integrity_table, unfilled_integrity);
}

static const struct {
    unsigned char id[16];
    const void **table;
} TABLES[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9}, runtime_table},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66}, hooks_table},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc}, tls_table},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93}, cls_table},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e}, checks_table},
    {{0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72,
      0x86}, bypass_table},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2}, integrity_table},
};

API CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&filled, fill_unfilled);
    for (size_t i = 0; i < sizeof TABLES / sizeof TABLES[0]; i++)
        if (!memcmp(TABLES[i].id, id->bytes, sizeof TABLES[i].id)) {
            *table = TABLES[i].table;
            return CUDA_SUCCESS;
        }
    *table = NULL;
    return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable: no such table in gdev");
}
