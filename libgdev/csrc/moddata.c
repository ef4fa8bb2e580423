/* Modules' pinned data segments (gmodule_data): a module with __managed__ variables has its
 * data segment in pinned memory, which the daemon passes (MODULE_DATA) and this process maps
 * at the segment's GPU address, so the host and the kernels use one copy of each managed
 * variable.  When the module goes (unloaded, or its context closed, as cudaDeviceReset does)
 * the segment stays at its address as a private copy of its last bytes: a program's pointer
 * to a managed variable keeps its value, as CUDA's host copy does.  Such a copy gives its
 * range up to the next buffer the daemon places there (gdev_moddata_evict). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdev_internal.h"

#define SEGMENT_SLACK (1u << 20) /* a segment is its data rounded up to the daemon's pages */

/* A segment no module holds any more, kept at its address as a private copy. */
struct kept {
    uint8_t *base;
    uint64_t size;
    struct kept *next;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept *kept;

/* Replaces the shared mapping of d by a private copy of its bytes at the same address. */
static void keep(struct gdev_dma *d)
{
    struct kept *k = malloc(sizeof *k);
    void *copy = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!k || copy == MAP_FAILED) {
        free(k);
        munmap(d->base, d->size);
        return;
    }
    memcpy(copy, d->base, d->size);
    if (mremap(copy, d->size, d->size, MREMAP_MAYMOVE | MREMAP_FIXED, d->base) == MAP_FAILED) {
        munmap(copy, d->size);
        munmap(d->base, d->size);
        free(k);
        return;
    }
    *k = (struct kept){d->base, d->size, NULL};
    pthread_mutex_lock(&kept_lock);
    k->next = kept;
    kept = k;
    pthread_mutex_unlock(&kept_lock);
}

void gdev_moddata_unmap(Ghandle h, uint64_t id)
{
    struct gdev_dma **link = &h->moddata;
    while (*link) {
        struct gdev_dma *d = *link;
        if (id && d->buf_id != id) {
            link = &d->next;
            continue;
        }
        *link = d->next;
        keep(d);
        free(d);
    }
}

void gdev_moddata_evict(const void *at, uint64_t size)
{
    const uint8_t *lo = at, *hi = lo + size;
    pthread_mutex_lock(&kept_lock);
    for (struct kept **link = &kept; *link;) {
        struct kept *k = *link;
        if (k->base < hi && lo < k->base + k->size) {
            *link = k->next;
            munmap(k->base, k->size);
            free(k);
        } else {
            link = &k->next;
        }
    }
    pthread_mutex_unlock(&kept_lock);
}

/* MODULE_DATA: module m's pinned data segment, mapped at its GPU address (lock held). */
static struct gdev_dma *map_data(Ghandle h, const struct gdev_module *m)
{
    struct gdev_abi_module_ref req = {.module_id = m->id};
    struct gdev_abi_dma out;
    struct gdev_reply r;
    struct gdev_dma *d = calloc(1, sizeof *d);
    if (!d || gdev_conn_call(&h->conn, GDEV_CMD_MODULE_DATA, &req, sizeof req, NULL, 0, &out,
                             sizeof out, &r)) {
        free(d);
        return NULL;
    }
    struct stat st;
    /* the daemon's segment: the module's, of the size it says (no SIGBUS past a short fd) */
    if (out.addr != m->data_addr || out.size < m->data_size ||
        out.size - m->data_size >= SEGMENT_SLACK || fstat(r.fd, &st) ||
        (uint64_t)st.st_size < out.size) {
        close(r.fd);
        free(d);
        gdev_fail(EPROTO, "MODULE_DATA: a segment of %llu bytes at 0x%llx, not the module's "
                  "%llu at 0x%llx", (unsigned long long)out.size, (unsigned long long)out.addr,
                  (unsigned long long)m->data_size, (unsigned long long)m->data_addr);
        return NULL;
    }
    if (!(d->base = gdev_map_at(r.fd, out.size, out.addr))) {
        free(d);
        return NULL;
    }
    *d = (struct gdev_dma){.buf_id = m->id, .addr = out.addr, .size = out.size,
                           .base = d->base, .next = h->moddata};
    h->moddata = d;
    return d;
}

GDEV_EXPORT void *gmodule_data(Ghandle h, const struct gdev_module *m)
{
    struct gdev_dma *d;
    if (!h || !m) {
        gdev_fail(EINVAL, "gmodule_data: no handle or module");
        return NULL;
    }
    pthread_mutex_lock(&h->lock);
    for (d = h->moddata; d && d->buf_id != m->id; d = d->next)
        ;
    if (!d)
        d = map_data(h, m);
    pthread_mutex_unlock(&h->lock);
    return d ? d->base : NULL;
}
