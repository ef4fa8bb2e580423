/* A Gdev handle in a client process: open, close, pinned buffers (libgdev/handle.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdev_internal.h"

GDEV_EXPORT Ghandle gopen(int minor)
{
    struct gdev_ticket t;
    struct gdev_abi_hello hello;
    struct gdev_abi_hello_reply out;
    Ghandle h = calloc(1, sizeof *h);

    if (!h) {
        gdev_fail(ENOMEM, "gopen");
        return NULL;
    }
    if (gdev_open_gate(minor, &h->fd, &t) < 0)
        goto free_h;
    if (gdev_conn_open(&h->conn, t.socket) < 0)
        goto close_fd;
    memcpy(hello.token, t.token, sizeof hello.token);
    if (gdev_conn_call(&h->conn, GDEV_CMD_HELLO, &hello, sizeof hello, NULL, 0, &out,
                       sizeof out, NULL) < 0)
        goto close_conn;
    h->minor = minor;
    h->session = out.session;
    pthread_mutex_init(&h->lock, NULL);
    return h;
close_conn:
    gdev_conn_close(&h->conn);
close_fd:
    close(h->fd);
free_h:
    free(h);
    return NULL;
}

GDEV_EXPORT int gclose(Ghandle h)
{
    if (!h)
        return gdev_fail(ENOENT, "gclose: no handle");
    while (h->dma) {
        struct gdev_dma *d = h->dma;
        h->dma = d->next;
        munmap(d->base, d->size);
        free(d);
    }
    gdev_moddata_unmap(h, 0);
    if (h->staging)
        munmap(h->staging, h->staging_size);
    gdev_conn_close(&h->conn); /* the daemon then frees everything the session held */
    close(h->fd);
    pthread_mutex_destroy(&h->lock);
    free(h);
    return 0;
}

struct gdev_dma *gdev_find_dma(Ghandle h, const void *p, uint64_t size)
{
    const uint8_t *q = p;
    for (struct gdev_dma *d = h->dma; d; d = d->next)
        if (q >= d->base && q < d->base + d->size && size <= (uint64_t)(d->base + d->size - q))
            return d;
    return NULL;
}

/* How dma_alloc places a pinned buffer in this process. */
enum dma_place {
    DMA_PREFER_GPU_VA, /* at its GPU address if that range is free, else anywhere */
    DMA_AT_GPU_VA,     /* at its GPU address or not at all */
};

/* Map a memfd the daemon passed at `at` (without replacing any mapping) or, unless `place` is
 * DMA_AT_GPU_VA, anywhere when that range is taken; closes it.  NULL (errno set by gdev_fail)
 * on failure. */
static uint8_t *map_shared(int fd, uint64_t size, void *at, enum dma_place place)
{
    gdev_moddata_evict(at, size); /* a gone module's data kept there gives the range up */
    void *p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    int err = errno;
    if (p != MAP_FAILED && p != at) {           /* a kernel without MAP_FIXED_NOREPLACE */
        munmap(p, size);
        p = MAP_FAILED;
        err = EEXIST;
    }
    if (p == MAP_FAILED && place == DMA_PREFER_GPU_VA) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = errno;
    }
    close(fd);
    if (p == MAP_FAILED && place == DMA_AT_GPU_VA) {
        gdev_fail(err, "mapping a shared buffer of %llu bytes at its GPU address %p: that "
                  "range of this process is taken", (unsigned long long)size, at);
        return NULL;
    }
    if (p == MAP_FAILED) {
        gdev_fail(err, "mapping a shared buffer of %llu bytes", (unsigned long long)size);
        return NULL;
    }
    return p;
}

/* A pinned buffer mapped in this process as `place` says. */
static void *dma_alloc(Ghandle h, uint64_t size, enum dma_place place)
{
    struct gdev_abi_size req = {.size = size};
    struct gdev_abi_dma out;
    struct gdev_reply r;
    struct gdev_dma *d = calloc(1, sizeof *d);
    int err;

    if (!d) {
        gdev_fail(ENOMEM, "gmalloc_dma");
        return NULL;
    }
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, GDEV_CMD_GMALLOC_DMA, &req, sizeof req, NULL, 0, &out,
                         sizeof out, &r);
    if (!err) {
        d->base = map_shared(r.fd, out.size, (void *)(uintptr_t)out.addr, place);
        if (!d->base) {
            struct gdev_abi_buf fr = {.buf_id = out.buf_id};
            struct gdev_abi_size ignored;
            gdev_conn_call(&h->conn, GDEV_CMD_GFREE_DMA, &fr, sizeof fr, NULL, 0, &ignored,
                           sizeof ignored, NULL);
            err = -ENOMEM;
        }
    }
    if (!err) {
        d->buf_id = out.buf_id;
        d->addr = out.addr;
        d->size = out.size;
        d->next = h->dma;
        h->dma = d;
    }
    pthread_mutex_unlock(&h->lock);
    if (err) {
        free(d);
        return NULL;
    }
    return d->base;
}

uint8_t *gdev_map_at(int fd, uint64_t size, uint64_t addr)
{
    return map_shared(fd, size, (void *)(uintptr_t)addr, DMA_AT_GPU_VA);
}

GDEV_EXPORT void *gmalloc_dma(Ghandle h, uint64_t size)
{
    return dma_alloc(h, size, DMA_PREFER_GPU_VA);
}

GDEV_EXPORT void *gmalloc_unified(Ghandle h, uint64_t size)
{
    return dma_alloc(h, size, DMA_AT_GPU_VA);
}

GDEV_EXPORT uint64_t gfree_dma(Ghandle h, void *buf)
{
    struct gdev_dma **link, *d = NULL;
    struct gdev_abi_size out = {0};

    pthread_mutex_lock(&h->lock);
    for (link = &h->dma; *link; link = &(*link)->next)
        if ((*link)->base == buf) {
            d = *link;
            break;
        }
    if (!d) {
        gdev_fail(ENOENT, "gfree_dma: %p is not a gmalloc_dma buffer", buf);
    } else {
        struct gdev_abi_buf req = {.buf_id = d->buf_id};
        if (gdev_conn_call(&h->conn, GDEV_CMD_GFREE_DMA, &req, sizeof req, NULL, 0, &out,
                           sizeof out, NULL) == 0) {
            *link = d->next;
            munmap(d->base, d->size);
            free(d);
        }
    }
    pthread_mutex_unlock(&h->lock);
    return out.size;
}

GDEV_EXPORT uint64_t gvirtget(Ghandle h, const void *p)
{
    struct gdev_abi_virt req;
    struct gdev_abi_addr out = {0};
    struct gdev_dma *d;

    pthread_mutex_lock(&h->lock);
    d = gdev_find_dma(h, p, 0);
    if (!d) {
        gdev_fail(EINVAL, "gvirtget: %p is not inside a pinned buffer", p);
    } else {
        req.buf_id = d->buf_id;
        req.offset = (uint64_t)((const uint8_t *)p - d->base);
        if (gdev_conn_call(&h->conn, GDEV_CMD_GVIRTGET, &req, sizeof req, NULL, 0, &out,
                           sizeof out, NULL) < 0)
            out.addr = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return out.addr;
}

GDEV_EXPORT int gdevice_count(int *result)
{
    char path[4096], buf[32];
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "%s/proc/gdev/virtual_device_count", gdev_mount());
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gdev_mount_failure("gdevice_count", path, errno, ENODEV);
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return gdev_fail(ENODEV, "gdevice_count: reading %s", path);
    buf[n] = '\0';
    *result = atoi(buf);
    return 0;
}
