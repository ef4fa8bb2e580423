/* Gdev's one-message verbs: each is one request and one reply under the handle's lock. */
#include <errno.h>
#include <string.h>

#include "gdev_internal.h"

/* One round trip under the handle's lock; 0 or a negative errno. */
int gdev_call(Ghandle h, uint32_t cmd, const void *args, size_t args_len, void *out,
              size_t out_size)
{
    int err;
    if (!h)
        return gdev_fail(EBADF, "%s: no handle", gdev_command_name(cmd));
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, cmd, args, args_len, NULL, 0, out, out_size, NULL);
    pthread_mutex_unlock(&h->lock);
    return err;
}

GDEV_EXPORT uint64_t gmalloc(Ghandle h, uint64_t size)
{
    struct gdev_abi_size req = {.size = size};
    struct gdev_abi_addr out;
    return gdev_call(h, GDEV_CMD_GMALLOC, &req, sizeof req, &out, sizeof out) ? 0 : out.addr;
}

GDEV_EXPORT uint64_t gfree(Ghandle h, uint64_t addr)
{
    struct gdev_abi_addr req = {.addr = addr};
    struct gdev_abi_size out;
    return gdev_call(h, GDEV_CMD_GFREE, &req, sizeof req, &out, sizeof out) ? 0 : out.size;
}

GDEV_EXPORT int gmemcpy(Ghandle h, uint64_t dst_addr, uint64_t src_addr, uint64_t size)
{
    struct gdev_abi_dtod req = {.dst_addr = dst_addr, .src_addr = src_addr, .size = size};
    return gdev_call(h, GDEV_CMD_GMEMCPY, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gstream_memcpy(Ghandle h, uint32_t stream, uint64_t dst_addr,
                               uint64_t src_addr, uint64_t size, uint32_t *id)
{
    struct gdev_abi_dtod req = {.dst_addr = dst_addr, .src_addr = src_addr, .size = size,
                                .stream = stream, ._pad0 = 0};
    struct gdev_abi_fence out;
    int err = gdev_call(h, GDEV_CMD_GMEMCPY_ASYNC, &req, sizeof req, &out, sizeof out);
    if (!err && id)
        *id = out.id;
    return err;
}

GDEV_EXPORT int gmemcpy_async(Ghandle h, uint64_t dst_addr, uint64_t src_addr, uint64_t size,
                              uint32_t *id)
{
    return gstream_memcpy(h, 0, dst_addr, src_addr, size, id);
}

GDEV_EXPORT int gstream_create(Ghandle h, uint32_t flags, uint32_t *stream)
{
    struct gdev_abi_stream_create req = {.flags = flags, ._pad0 = 0};
    struct gdev_abi_stream out;
    int err = gdev_call(h, GDEV_CMD_STREAM_CREATE, &req, sizeof req, &out, sizeof out);
    if (!err && stream)
        *stream = out.stream;
    return err;
}

GDEV_EXPORT int gtex_create(Ghandle h, const struct gdev_abi_tex_desc *desc, uint64_t *tex)
{
    struct gdev_abi_tex_handle out;
    int err;
    if (!desc)
        return -EINVAL;
    err = gdev_call(h, GDEV_CMD_TEX_CREATE, desc, sizeof *desc, &out, sizeof out);
    if (!err && tex)
        *tex = out.handle;
    return err;
}

GDEV_EXPORT int gtex_destroy(Ghandle h, uint64_t tex)
{
    struct gdev_abi_tex_handle req = {.handle = tex};
    return gdev_call(h, GDEV_CMD_TEX_DESTROY, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gstream_destroy(Ghandle h, uint32_t stream)
{
    struct gdev_abi_stream req = {.stream = stream, ._pad0 = 0};
    return gdev_call(h, GDEV_CMD_STREAM_DESTROY, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gstream_wait(Ghandle h, uint32_t stream, uint32_t fence)
{
    struct gdev_abi_stream_wait req = {.stream = stream, .fence = fence};
    return gdev_call(h, GDEV_CMD_STREAM_WAIT, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gstream_sync(Ghandle h, uint32_t stream, const struct gdev_time *timeout)
{
    struct gdev_abi_stream_sync req = {.stream = stream};
    if (timeout) {
        req.flags = GDEV_ABI_STREAM_SYNC_TIMEOUT;
        req.timeout_us = timeout->neg ? 0 : timeout->sec * 1000000u + timeout->usec;
    }
    return gdev_call(h, GDEV_CMD_STREAM_SYNC, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int64_t gprintf_drain(Ghandle h, void *buf, uint64_t cap)
{
    struct gdev_abi_size req = {.size = cap};
    struct gdev_reply r;
    int64_t n;
    if (!h || (!buf && cap))
        return gdev_fail(EINVAL, "gprintf_drain: no handle or buffer");
    if (!cap)
        return 0;
    pthread_mutex_lock(&h->lock);
    int err = gdev_conn_call(&h->conn, GDEV_CMD_PRINTF_DRAIN, &req, sizeof req, NULL, 0, NULL,
                             0, &r);
    n = err ? err : (int64_t)(r.tail_len < cap ? r.tail_len : cap);
    if (n > 0)
        memcpy(buf, r.tail, (size_t)n); /* the reply lives in the connection's buffer */
    pthread_mutex_unlock(&h->lock);
    return n;
}

GDEV_EXPORT int glaunch(Ghandle h, struct gdev_kernel *k, uint32_t *id)
{
    struct gdev_abi_launch req;
    struct gdev_abi_fence out;
    static _Thread_local uint8_t tail[GDEV_PARAM_MAX + 256];
    size_t name_len = k && k->name ? strlen(k->name) : 0;
    int err;

    if (!h || !k || !name_len)
        return gdev_fail(EINVAL, "glaunch: no handle, kernel or kernel name");
    if (name_len > 256 || k->param_size > GDEV_PARAM_MAX)
        return gdev_fail(EINVAL, "glaunch: name of %zu or parameters of %u bytes", name_len,
                         k->param_size);
    req = (struct gdev_abi_launch){
        .code_addr = k->code_addr, .code_size = k->code_size, .data_addr = k->data_addr,
        .grid_x = k->grid_x, .grid_y = k->grid_y, .grid_z = k->grid_z,
        .block_x = k->block_x, .block_y = k->block_y, .block_z = k->block_z,
        .shared_dynamic = k->smem_size, .name_len = (uint32_t)name_len,
        .params_len = k->param_size, .stream = 0,
    };
    memcpy(tail, k->name, name_len);
    if (k->param_size)
        memcpy(tail + name_len, k->param_buf, k->param_size);
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, GDEV_CMD_GLAUNCH, &req, sizeof req, tail,
                         name_len + k->param_size, &out, sizeof out, NULL);
    pthread_mutex_unlock(&h->lock);
    if (!err && id)
        *id = out.id;
    return err;
}

GDEV_EXPORT int gsync(Ghandle h, uint32_t id, struct gdev_time *timeout)
{
    struct gdev_abi_sync req = {.id = id, .flags = 0, .timeout_us = 0};
    if (timeout) {
        req.flags = GDEV_ABI_GSYNC_TIMEOUT;
        req.timeout_us = timeout->neg ? 0 : timeout->sec * 1000000u + timeout->usec;
    }
    return gdev_call(h, GDEV_CMD_GSYNC, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gbarrier(Ghandle h)
{
    return gdev_call(h, GDEV_CMD_GBARRIER, NULL, 0, NULL, 0);
}

GDEV_EXPORT int gquery(Ghandle h, uint32_t type, uint64_t *result)
{
    struct gdev_abi_query req = {.type = type, ._pad0 = 0};
    struct gdev_abi_result out;
    int err = gdev_call(h, GDEV_CMD_GQUERY, &req, sizeof req, &out, sizeof out);
    if (!err)
        *result = out.result;
    return err;
}

GDEV_EXPORT int gtune(Ghandle h, uint32_t type, uint32_t value)
{
    struct gdev_abi_tune req = {.type = type, .value = value};
    return gdev_call(h, GDEV_CMD_GTUNE, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gshmget(Ghandle h, int key, uint64_t size, int flags)
{
    struct gdev_abi_shmget req = {.key = key, .flags = (uint32_t)flags, .size = size};
    struct gdev_abi_shmid out;
    int err = gdev_call(h, GDEV_CMD_GSHMGET, &req, sizeof req, &out, sizeof out);
    return err ? err : (int)out.id;
}

GDEV_EXPORT uint64_t gshmat(Ghandle h, int id, uint64_t addr, int flags)
{
    struct gdev_abi_shmat req = {.id = (uint32_t)id, .flags = (uint32_t)flags, .addr = addr};
    struct gdev_abi_addr out;
    return gdev_call(h, GDEV_CMD_GSHMAT, &req, sizeof req, &out, sizeof out) ? 0 : out.addr;
}

GDEV_EXPORT int gshmdt(Ghandle h, uint64_t addr)
{
    struct gdev_abi_addr req = {.addr = addr};
    return gdev_call(h, GDEV_CMD_GSHMDT, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gshmctl(Ghandle h, int id, int cmd, void *buf)
{
    struct gdev_abi_shmctl req = {.id = (uint32_t)id, .cmd = (uint32_t)cmd};
    struct gdev_abi_shmid_ds out;
    gdev_shmid_ds *ds = buf;
    int err;

    if ((cmd == GDEV_IPC_STAT || cmd == GDEV_IPC_SET) && !ds)
        return gdev_fail(EINVAL, "gshmctl: command %d needs a buffer", cmd);
    if (cmd == GDEV_IPC_SET) {
        req.uid = ds->uid;
        req.gid = ds->gid;
        req.mode = ds->mode;
    }
    err = gdev_call(h, GDEV_CMD_GSHMCTL, &req, sizeof req, &out, sizeof out);
    if (!err && cmd == GDEV_IPC_STAT)
        *ds = out;
    return err;
}

GDEV_EXPORT uint64_t gref(Ghandle hmaster, uint64_t addr, uint64_t size, Ghandle hslave)
{
    struct gdev_abi_handle slave;
    struct gdev_abi_ref req = {.addr = addr, .size = size};
    struct gdev_abi_addr out;
    if (!hslave || gdev_call(hslave, GDEV_CMD_GET_HANDLE, NULL, 0, &slave, sizeof slave))
        return 0;
    req.slave = slave.handle;
    return gdev_call(hmaster, GDEV_CMD_GREF, &req, sizeof req, &out, sizeof out) ? 0 : out.addr;
}

GDEV_EXPORT int gunref(Ghandle h, uint64_t addr)
{
    struct gdev_abi_addr req = {.addr = addr};
    return gdev_call(h, GDEV_CMD_GUNREF, &req, sizeof req, NULL, 0);
}

static int priority(Ghandle h, uint32_t prio, uint32_t flags)
{
    struct gdev_abi_prio req = {.prio = prio, .flags = flags};
    struct gdev_abi_prio_reply out;
    int err = gdev_call(h, GDEV_CMD_SET_PRIORITY, &req, sizeof req, &out, sizeof out);
    return err ? err : (int)out.prio;
}

GDEV_EXPORT int gset_priority(Ghandle h, int prio)
{
    return prio < 0 ? priority(h, 0, GDEV_ABI_PRIO_CLEAR) : priority(h, (uint32_t)prio, 0);
}

GDEV_EXPORT int gget_priority(Ghandle h)
{
    return priority(h, 0, GDEV_ABI_PRIO_GET);
}

static int guest(Ghandle h, uint32_t flag, uint32_t flags)
{
    struct gdev_abi_guest req = {.guest = flag, .flags = flags};
    struct gdev_abi_guest_reply out;
    int err = gdev_call(h, GDEV_CMD_SET_GUEST, &req, sizeof req, &out, sizeof out);
    return err ? err : (int)out.guest;
}

GDEV_EXPORT int gset_guest(Ghandle h, int flag)
{
    return flag < 0 ? guest(h, 0, GDEV_ABI_GUEST_CLEAR) : guest(h, flag ? 1 : 0, 0);
}

GDEV_EXPORT int gget_guest(Ghandle h)
{
    return guest(h, 0, GDEV_ABI_GUEST_GET);
}
