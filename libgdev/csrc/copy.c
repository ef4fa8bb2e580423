/* Host<->device copies: the three paths of Gdev's memcpy across the process boundary
 * (libgdev/transfer.py).  Pinned: the host side lies in a gmalloc_dma buffer, one message
 * with (buf_id, offset).  Direct: up to GDEV_DIRECT_MAX bytes inside the message or reply.
 * Staged: larger copies stream through the session's staging slots, `slots` requests in
 * flight.  A staged copy collects every outstanding reply before returning the first error,
 * so the connection stays in step. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdev_internal.h"

static int get_staging(Ghandle h)
{
    struct gdev_abi_staging out;
    struct gdev_reply r;
    void *p;
    int err;

    if (h->staging)
        return 0;
    err = gdev_conn_call(&h->conn, GDEV_CMD_GET_STAGING, NULL, 0, NULL, 0, &out, sizeof out,
                         &r);
    if (err)
        return err;
    if (!out.slots || out.slots > 64 || out.size < out.slots) {
        close(r.fd);
        return gdev_fail(EPROTO, "staging buffer of %llu bytes in %u slots",
                         (unsigned long long)out.size, out.slots);
    }
    p = mmap(NULL, out.size, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
    err = errno;
    close(r.fd);
    if (p == MAP_FAILED)
        return gdev_fail(err, "mapping the staging buffer");
    h->staging = p;
    h->staging_size = out.size;
    h->slots = out.slots;
    h->chunk = out.size / out.slots;
    return 0;
}

static struct gdev_abi_memcpy_host staged_args(Ghandle h, uint64_t i, uint64_t dev,
                                               uint64_t n, uint32_t stream)
{
    return (struct gdev_abi_memcpy_host){
        .dev_addr = dev, .size = n, .host_offset = (i % h->slots) * h->chunk, .buf_id = 0,
        .host_kind = GDEV_ABI_HOST_STAGING, .stream = stream};
}

/* Take the reply to rids[i % slots]; remember the first error.  A lost connection ends
 * the copy at once (-1). */
static int take(Ghandle h, uint32_t cmd, uint64_t rid, int *first)
{
    struct gdev_reply r;
    int err = gdev_conn_receive(&h->conn, cmd, rid, NULL, 0, &r, 0);
    if (err && !*first)
        *first = err;
    return h->conn.broken ? -1 : err;
}

static int staged_to_device(Ghandle h, uint64_t dst, const uint8_t *src, uint64_t size,
                            uint32_t stream)
{
    uint64_t rids[64], nchunks = (size + h->chunk - 1) / h->chunk, head = 0, i;
    int first = 0;

    for (i = 0; i < nchunks && !first; i++) {
        uint64_t off = i * h->chunk, n = size - off < h->chunk ? size - off : h->chunk;
        struct gdev_abi_memcpy_host a = staged_args(h, i, dst + off, n, stream);
        if (i - head == h->slots && take(h, GDEV_CMD_GMEMCPY_TO_DEVICE, rids[head++ % 64],
                                         &first) < 0)
            return first;
        if (first)
            break;
        memcpy(h->staging + a.host_offset, src + off, n);
        if (gdev_conn_send(&h->conn, GDEV_CMD_GMEMCPY_TO_DEVICE, &a, sizeof a, NULL, 0,
                           &rids[i % 64]) < 0)
            return -EPIPE;
    }
    while (head < i)
        if (take(h, GDEV_CMD_GMEMCPY_TO_DEVICE, rids[head++ % 64], &first) < 0)
            break;
    return first;
}

static int staged_from_device(Ghandle h, uint8_t *dst, uint64_t src, uint64_t size,
                              uint32_t stream)
{
    uint64_t rids[64], nchunks = (size + h->chunk - 1) / h->chunk, sent = 0, i;
    int first = 0;

    for (i = 0; i < nchunks; i++) {
        while (sent < nchunks && sent < i + h->slots && !first) {
            uint64_t off = sent * h->chunk;
            uint64_t n = size - off < h->chunk ? size - off : h->chunk;
            struct gdev_abi_memcpy_host a = staged_args(h, sent, src + off, n, stream);
            if (gdev_conn_send(&h->conn, GDEV_CMD_GMEMCPY_FROM_DEVICE, &a, sizeof a, NULL, 0,
                               &rids[sent % 64]) < 0)
                return -EPIPE;
            sent++;
        }
        if (i >= sent)
            break;
        int err = take(h, GDEV_CMD_GMEMCPY_FROM_DEVICE, rids[i % 64], &first);
        if (err < 0 && h->conn.broken)
            return first;
        if (!err && !first) {
            uint64_t off = i * h->chunk, n = size - off < h->chunk ? size - off : h->chunk;
            memcpy(dst + off, h->staging + (i % h->slots) * h->chunk, n);
        }
    }
    return first;
}

static int pinned(Ghandle h, uint32_t cmd, uint64_t dev, struct gdev_dma *d, const void *p,
                  uint64_t size, uint32_t stream, uint32_t *id)
{
    struct gdev_abi_memcpy_host a = {
        .dev_addr = dev, .size = size, .host_offset = (uint64_t)((const uint8_t *)p - d->base),
        .buf_id = d->buf_id, .host_kind = GDEV_ABI_HOST_DMA, .stream = stream};
    struct gdev_abi_fence out = {0};
    int async = cmd == GDEV_CMD_GMEMCPY_TO_DEVICE_ASYNC
                || cmd == GDEV_CMD_GMEMCPY_FROM_DEVICE_ASYNC;
    int err = gdev_conn_call(&h->conn, cmd, &a, sizeof a, NULL, 0, &out,
                             async ? sizeof out : 0, NULL);
    if (!err && id)
        *id = out.id;
    return err;
}

/* The work of gmemcpy_to_device[_async], under the handle's lock. */
static int to_device(Ghandle h, uint32_t cmd, uint64_t dst, const void *src, uint64_t size,
                     uint32_t stream, uint32_t *id)
{
    struct gdev_dma *d = gdev_find_dma(h, src, size);
    if (id)
        *id = 0;
    if (d)
        return pinned(h, cmd, dst, d, src, size, stream, id);
    if (size <= GDEV_DIRECT_MAX) {
        struct gdev_abi_memcpy_host a = {.dev_addr = dst, .size = size,
                                         .host_kind = GDEV_ABI_HOST_INLINE, .stream = stream};
        return gdev_conn_call(&h->conn, GDEV_CMD_GMEMCPY_TO_DEVICE, &a, sizeof a, src, size,
                              NULL, 0, NULL);
    }
    int err = get_staging(h);
    return err ? err : staged_to_device(h, dst, src, size, stream);
}

static int from_device(Ghandle h, uint32_t cmd, void *dst, uint64_t src, uint64_t size,
                       uint32_t stream, uint32_t *id)
{
    struct gdev_dma *d = gdev_find_dma(h, dst, size);
    if (id)
        *id = 0;
    if (d)
        return pinned(h, cmd, src, d, dst, size, stream, id);
    if (size <= GDEV_DIRECT_MAX) {
        struct gdev_abi_memcpy_host a = {.dev_addr = src, .size = size,
                                         .host_kind = GDEV_ABI_HOST_INLINE, .stream = stream};
        struct gdev_reply r;
        int err = gdev_conn_call(&h->conn, GDEV_CMD_GMEMCPY_FROM_DEVICE, &a, sizeof a, NULL, 0,
                                 NULL, 0, &r);
        if (!err && r.tail_len != size)
            return gdev_fail(EPROTO, "reply carried %zu of %llu bytes", r.tail_len,
                             (unsigned long long)size);
        if (!err && size)
            memcpy(dst, r.tail, size);
        return err;
    }
    int err = get_staging(h);
    return err ? err : staged_from_device(h, dst, src, size, stream);
}

int gdev_copy_to_device(Ghandle h, uint32_t cmd, uint64_t dst, const void *src, uint64_t size,
                        uint32_t stream, uint32_t *id)
{
    int err;
    if (!h || (!src && size))
        return gdev_fail(EINVAL, "%s: no handle or host buffer", gdev_command_name(cmd));
    pthread_mutex_lock(&h->lock);
    err = to_device(h, cmd, dst, src, size, stream, id);
    pthread_mutex_unlock(&h->lock);
    return err;
}

int gdev_copy_from_device(Ghandle h, uint32_t cmd, void *dst, uint64_t src, uint64_t size,
                          uint32_t stream, uint32_t *id)
{
    int err;
    if (!h || (!dst && size))
        return gdev_fail(EINVAL, "%s: no handle or host buffer", gdev_command_name(cmd));
    pthread_mutex_lock(&h->lock);
    err = from_device(h, cmd, dst, src, size, stream, id);
    pthread_mutex_unlock(&h->lock);
    return err;
}

GDEV_EXPORT int gmemcpy_to_device(Ghandle h, uint64_t dst_addr, const void *src_buf,
                                  uint64_t size)
{
    return gdev_copy_to_device(h, GDEV_CMD_GMEMCPY_TO_DEVICE, dst_addr, src_buf, size, 0,
                               NULL);
}

GDEV_EXPORT int gmemcpy_to_device_async(Ghandle h, uint64_t dst_addr, const void *src_buf,
                                        uint64_t size, uint32_t *id)
{
    return gdev_copy_to_device(h, GDEV_CMD_GMEMCPY_TO_DEVICE_ASYNC, dst_addr, src_buf, size, 0,
                               id);
}

GDEV_EXPORT int gmemcpy_from_device(Ghandle h, void *dst_buf, uint64_t src_addr, uint64_t size)
{
    return gdev_copy_from_device(h, GDEV_CMD_GMEMCPY_FROM_DEVICE, dst_buf, src_addr, size, 0,
                                 NULL);
}

GDEV_EXPORT int gmemcpy_from_device_async(Ghandle h, void *dst_buf, uint64_t src_addr,
                                          uint64_t size, uint32_t *id)
{
    return gdev_copy_from_device(h, GDEV_CMD_GMEMCPY_FROM_DEVICE_ASYNC, dst_buf, src_addr,
                                 size, 0, id);
}

GDEV_EXPORT int gstream_memcpy_to_device(Ghandle h, uint32_t stream, uint64_t dst_addr,
                                         const void *src_buf, uint64_t size, uint32_t *id)
{
    return gdev_copy_to_device(h, GDEV_CMD_GMEMCPY_TO_DEVICE_ASYNC, dst_addr, src_buf, size,
                               stream, id);
}

GDEV_EXPORT int gstream_memcpy_from_device(Ghandle h, uint32_t stream, void *dst_buf,
                                           uint64_t src_addr, uint64_t size, uint32_t *id)
{
    return gdev_copy_from_device(h, GDEV_CMD_GMEMCPY_FROM_DEVICE_ASYNC, dst_buf, src_addr,
                                 size, stream, id);
}
