/* Hints about managed memory (cuMemAdvise, cuMemPrefetchAsync, cuStreamAttachMemAsync) and
 * what they say back (cuMemRangeGetAttribute[s]).  Managed memory's pages are the host's and
 * the device's at once (memory.c), so no hint moves anything; each is checked (a range of
 * one managed allocation, a known advice, a valid location) and remembered per 4 KiB page of
 * its allocation, as CUDA keeps advice per page, so the range attributes report what was
 * advised and where the range was last prefetched.  A page's record lives with its
 * allocation's (cu_advice_forget at cuMemFree). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define PAGE 4096u
#define HOST_BIT 63 /* accessed_by: the host; devices are bits 0..62 */

struct page {
    uint8_t read_mostly;
    CUmemLocation preferred, prefetched; /* type INVALID: none */
    uint64_t accessed_by;
};

struct advised {
    CUcontext ctx;
    uint64_t base, npages;
    struct page *pages;
    struct advised *next;
};

static struct advised *advised;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult managed_range(CUcontext c, CUdeviceptr p, size_t n, const char *who)
{
    if (!n || !cu_is_managed(c, p, n))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: 0x%llx+%zu is not managed memory", who,
                       (unsigned long long)p, n);
    return CUDA_SUCCESS;
}

static int location_ok(CUmemLocation loc)
{
    return (loc.type == CU_MEM_LOCATION_TYPE_DEVICE && loc.id >= 0 && loc.id < HOST_BIT &&
            loc.id < cu_device_count()) || loc.type == CU_MEM_LOCATION_TYPE_HOST ||
           loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* The page records of the allocation holding p, made on first use (under lock; NULL if out
 * of memory).  *first is the index of p's page. */
static struct advised *records(CUcontext c, CUdeviceptr p, uint64_t *first)
{
    struct alloc a;
    if (!cu_alloc_find(c, p, &a))
        return NULL;
    struct advised *r = advised;
    while (r && (r->ctx != c || r->base != a.addr))
        r = r->next;
    if (!r && (r = calloc(1, sizeof *r))) {
        *r = (struct advised){c, a.addr, (a.size + PAGE - 1) / PAGE, NULL, advised};
        if (!(r->pages = calloc(r->npages, sizeof *r->pages))) {
            free(r);
            return NULL;
        }
        advised = r;
    }
    *first = (p - a.addr) / PAGE;
    return r;
}

/* Apply fn to each page of [p, p + n), an already checked managed range. */
static CUresult each_page(CUcontext c, CUdeviceptr p, size_t n,
                          void (*fn)(struct page *, const void *), const void *arg)
{
    uint64_t first;
    pthread_mutex_lock(&lock);
    struct advised *r = records(c, p, &first);
    uint64_t last = r ? (p + n - 1 - r->base) / PAGE : 0;
    for (uint64_t i = first; r && i <= last; i++)
        fn(&r->pages[i], arg);
    pthread_mutex_unlock(&lock);
    return r ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Drop the records of c's allocation at base (of every allocation of c if base is 0). */
void cu_advice_forget(CUcontext c, CUdeviceptr base)
{
    pthread_mutex_lock(&lock);
    for (struct advised **q = &advised; *q;) {
        struct advised *gone = *q;
        if (gone->ctx != c || (base && gone->base != base)) {
            q = &gone->next;
            continue;
        }
        *q = gone->next;
        free(gone->pages);
        free(gone);
    }
    pthread_mutex_unlock(&lock);
}

static uint64_t bit_of(CUmemLocation loc)
{
    return 1ull << (loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : HOST_BIT);
}

struct advice {
    CUmem_advise advice;
    CUmemLocation loc;
};

static void advise_page(struct page *pg, const void *arg)
{
    const struct advice *a = arg;
    switch (a->advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY: pg->read_mostly = 1; break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: pg->read_mostly = 0; break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: pg->preferred = a->loc; break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: memset(&pg->preferred, 0, sizeof pg->preferred);
        break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY: pg->accessed_by |= bit_of(a->loc); break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY: pg->accessed_by &= ~bit_of(a->loc); break;
    }
}

static void prefetch_page(struct page *pg, const void *arg)
{
    pg->prefetched = *(const CUmemLocation *)arg;
}

API CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc,
                                   unsigned int flags, CUstream s)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r || (r = managed_range(c, p, n, "cuMemPrefetchAsync")))
        return r;
    (void)s; /* nothing is queued on it: the pages are where every processor reads them */
    if (flags || !location_ok(loc))
        return CUDA_ERROR_INVALID_VALUE;
    return each_page(c, p, n, prefetch_page, &loc);
}

API CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r || (r = managed_range(c, p, n, "cuMemAdvise")))
        return r;
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    int needs_loc = advice != CU_MEM_ADVISE_SET_READ_MOSTLY &&
                    advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY;
    if (needs_loc && !location_ok(loc))
        return CUDA_ERROR_INVALID_DEVICE;
    struct advice a = {advice, loc};
    return each_page(c, p, n, advise_page, &a);
}

/* Which streams may touch a managed allocation: a hint here too (every stream of the context
 * sees the same pages); length 0 or the whole allocation, as CUDA requires. */
API CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t length, unsigned int flags)
{
    CURRENT(c);
    (void)s;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
        flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr base;
    size_t size;
    if (cuMemGetAddressRange(&base, &size, p) || base != p || !cu_is_managed(c, p, size) ||
        (length && length != size))
        return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuStreamAttachMemAsync: 0x%llx+%zu is not a "
                       "whole managed allocation", (unsigned long long)p, length);
    return CUDA_SUCCESS;
}

/* ---- what the hints say back ---------------------------------------------------------- */

/* Over every page of a range: read-mostly everywhere, the one preferred and last-prefetched
 * location (type INVALID when none or when they differ), the processors all pages are
 * accessed by. */
struct summary {
    int read_mostly;
    CUmemLocation preferred, prefetched;
    uint64_t accessed_by;
};

static int same(CUmemLocation a, CUmemLocation b)
{
    return a.type == b.type && (a.type != CU_MEM_LOCATION_TYPE_DEVICE || a.id == b.id);
}

static void summarize(CUcontext c, CUdeviceptr p, size_t n, struct summary *s)
{
    const struct page none = {0};
    uint64_t first = 0, last = 0;
    struct advised *r;
    struct alloc a;
    memset(s, 0, sizeof *s);
    if (!cu_alloc_find(c, p, &a))
        return;
    pthread_mutex_lock(&lock);
    r = advised;
    while (r && (r->ctx != c || r->base != a.addr))
        r = r->next;
    first = (p - a.addr) / PAGE, last = (p + n - 1 - a.addr) / PAGE;
    for (uint64_t i = first; i <= last; i++) {
        const struct page *pg = r ? &r->pages[i] : &none;
        if (i == first)
            *s = (struct summary){pg->read_mostly, pg->preferred, pg->prefetched,
                                  pg->accessed_by};
        s->read_mostly &= pg->read_mostly;
        s->accessed_by &= pg->accessed_by;
        if (!same(s->preferred, pg->preferred))
            memset(&s->preferred, 0, sizeof s->preferred);
        if (!same(s->prefetched, pg->prefetched))
            memset(&s->prefetched, 0, sizeof s->prefetched);
    }
    pthread_mutex_unlock(&lock);
}

/* A location as the legacy attributes name it: a device, CU_DEVICE_CPU or CU_DEVICE_INVALID. */
static int ordinal(CUmemLocation loc)
{
    return loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id
           : loc.type == CU_MEM_LOCATION_TYPE_INVALID ? CU_DEVICE_INVALID : CU_DEVICE_CPU;
}

static CUresult range_attribute(const struct summary *s, CUmem_range_attribute attr,
                                void *data, size_t size)
{
    int *out = data;
    if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        if (!size || size % 4)
            return CUDA_ERROR_INVALID_VALUE;
        size_t k = 0;
        for (int bit = 0; bit <= HOST_BIT && k < size / 4; bit++)
            if (s->accessed_by >> bit & 1)
                out[k++] = bit == HOST_BIT ? CU_DEVICE_CPU : bit;
        while (k < size / 4)
            out[k++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    if (size != 4)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: *out = s->read_mostly; break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: *out = ordinal(s->preferred); break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: *out = ordinal(s->prefetched); break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: *out = (int)s->preferred.type; break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: *out = (int)s->prefetched.type;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
        *out = s->preferred.type == CU_MEM_LOCATION_TYPE_DEVICE ? s->preferred.id
                                                                : CU_DEVICE_INVALID;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
        *out = s->prefetched.type == CU_MEM_LOCATION_TYPE_DEVICE ? s->prefetched.id
                                                                 : CU_DEVICE_INVALID;
        break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
                                    CUdeviceptr p, size_t n)
{
    struct summary s;
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r || (r = managed_range(c, p, n, "cuMemRangeGetAttribute")))
        return r;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    summarize(c, p, n, &s);
    return range_attribute(&s, attr, data, size);
}

API CUresult cuMemRangeGetAttributes(void **data, size_t *sizes, CUmem_range_attribute *attrs,
                                     size_t count, CUdeviceptr p, size_t n)
{
    struct summary s;
    CUcontext c = NULL;
    CUresult r = cu_current(&c);
    if (r || (r = managed_range(c, p, n, "cuMemRangeGetAttributes")))
        return r;
    if (!data || !sizes || !attrs || !count)
        return CUDA_ERROR_INVALID_VALUE;
    summarize(c, p, n, &s);
    for (size_t i = 0; i < count && !r; i++)
        r = data[i] ? range_attribute(&s, attrs[i], data[i], sizes[i]) : CUDA_ERROR_INVALID_VALUE;
    return r;
}

/* The per-thread default-stream names of these entry points (cuda_internal.h). */
PTSZ(cuMemPrefetchAsync) PTSZ(cuStreamAttachMemAsync)
