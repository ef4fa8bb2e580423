/* Module verbs (libgdev/loader.py): MODULE_LOAD sends the image once (inside the message, or
 * through a pinned buffer that lives for the call) and decodes the function table the daemon
 * replies with (libgdev/moduletable.py); no PTX is parsed here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdev_internal.h"

#define NAME_MAX_LEN 1024
#define INLINE_IMAGE_MAX (GDEV_ABI_MAX_PAYLOAD - GDEV_CMD_MODULE_LOAD_REQUEST_SIZE - NAME_MAX_LEN)

struct reader {
    const uint8_t *p, *end;
};

static const void *take(struct reader *r, size_t n)
{
    const uint8_t *at = r->p;
    if ((size_t)(r->end - r->p) < n)
        return NULL;
    r->p += n;
    return at;
}

/* A name of len bytes, padded to 8, as a fresh C string. */
static char *name(struct reader *r, uint32_t len)
{
    const char *raw = len <= NAME_MAX_LEN ? take(r, (len + 7u) & ~7u) : NULL;
    return raw ? strndup(raw, len) : NULL;
}

void gdev_module_free(struct gdev_module *m)
{
    for (uint32_t i = 0; m->functions && i < m->n_functions; i++) {
        free(m->functions[i].name);
        free(m->functions[i].params);
    }
    for (uint32_t i = 0; m->globals && i < m->n_globals; i++)
        free(m->globals[i].name);
    free(m->functions);
    free(m->globals);
    free(m);
}

static int decode_function(struct reader *r, struct gdev_function *f)
{
    struct gdev_abi_modtab_function rec;
    const void *raw = take(r, sizeof rec);
    if (!raw)
        return -1;
    memcpy(&rec, raw, sizeof rec);
    *f = (struct gdev_function){
        .n_params = rec.n_params, .param_size = rec.param_size, .max_threads = rec.max_threads,
        .static_shared = rec.static_shared, .local_size = rec.local_size,
        .num_regs = rec.num_regs, .const_size = rec.const_size,
        .max_dynamic_shared = rec.max_dynamic_shared,
        .prints = !!(rec.flags & GDEV_MODTAB_FUNC_PRINTS)};
    if ((rec.flags & ~GDEV_MODTAB_FUNC_PRINTS) || !(f->name = name(r, rec.name_len)) ||
        rec.n_params > 4096)
        return -1;
    f->params = calloc(rec.n_params ? rec.n_params : 1, sizeof *f->params);
    for (uint32_t i = 0; f->params && i < rec.n_params; i++) {
        struct gdev_abi_modtab_param p;
        if (!(raw = take(r, sizeof p)))
            return -1;
        memcpy(&p, raw, sizeof p);
        f->params[i] = (struct gdev_param){.offset = p.offset, .size = p.size, .align = p.align};
        memcpy(f->params[i].type, p.type, sizeof p.type);
        if ((uint64_t)p.offset + p.size > rec.param_size)
            return -1;
    }
    return f->params ? 0 : -1;
}

static int decode_table(struct gdev_module *m, const uint8_t *tail, size_t len)
{
    struct reader r = {tail, tail + len};
    if (m->n_functions > len / 8 || m->n_globals > len / 8)
        return -1;
    m->functions = calloc(m->n_functions + 1, sizeof *m->functions);
    m->globals = calloc(m->n_globals + 1, sizeof *m->globals);
    if (!m->functions || !m->globals)
        return -1;
    for (uint32_t i = 0; i < m->n_functions; i++)
        if (decode_function(&r, &m->functions[i]) < 0)
            return -1;
    for (uint32_t i = 0; i < m->n_globals; i++) {
        struct gdev_abi_modtab_global g;
        const void *raw = take(&r, sizeof g);
        if (!raw)
            return -1;
        memcpy(&g, raw, sizeof g);
        m->globals[i] = (struct gdev_global){.addr = g.addr, .size = g.size, .space = g.space};
        if (g.space > 1 || !(m->globals[i].name = name(&r, g.name_len)))
            return -1;
    }
    return r.p == r.end ? 0 : -1;
}

/* Send MODULE_LOAD and decode its reply, under the handle's lock. */
static struct gdev_module *load(Ghandle h, const void *image, uint64_t size, const char *label)
{
    size_t nlen = strnlen(label, NAME_MAX_LEN);
    struct gdev_abi_module_load req = {.size = size, .name_len = (uint32_t)nlen,
                                       .host_kind = GDEV_ABI_HOST_INLINE};
    struct gdev_abi_module out;
    struct gdev_reply r;
    uint8_t *tail = NULL, *pinned = NULL;
    int err;

    if (size <= INLINE_IMAGE_MAX) {
        if (!(tail = malloc(nlen + size)))
            return NULL;
        memcpy(tail, label, nlen);
        memcpy(tail + nlen, image, size);
    } else {
        pthread_mutex_unlock(&h->lock); /* gmalloc_dma takes the lock itself */
        pinned = gmalloc_dma(h, size);
        pthread_mutex_lock(&h->lock);
        if (!pinned)
            return NULL;
        memcpy(pinned, image, size);
        struct gdev_dma *d = gdev_find_dma(h, pinned, size);
        req.host_kind = GDEV_ABI_HOST_DMA;
        req.buf_id = d->buf_id;
    }
    err = gdev_conn_call(&h->conn, GDEV_CMD_MODULE_LOAD, &req, sizeof req,
                         tail ? (const void *)tail : label, tail ? nlen + size : nlen, &out,
                         sizeof out, &r);
    free(tail);
    struct gdev_module *m = err ? NULL : calloc(1, sizeof *m);
    if (m) {
        *m = (struct gdev_module){.id = out.module_id, .data_addr = out.data_addr,
                                  .data_size = out.data_size, .ptx_version = out.ptx_version,
                                  .target_sm = out.target_sm, .n_functions = out.n_functions,
                                  .n_globals = out.n_globals};
        if (decode_table(m, r.tail, r.tail_len) < 0) {
            struct gdev_abi_module_ref ref = {.module_id = out.module_id};
            gdev_conn_call(&h->conn, GDEV_CMD_MODULE_UNLOAD, &ref, sizeof ref, NULL, 0, NULL,
                           0, NULL);
            gdev_module_free(m);
            m = NULL;
            gdev_fail(EPROTO, "MODULE_LOAD: malformed function table");
        }
    }
    if (pinned) {
        pthread_mutex_unlock(&h->lock);
        gfree_dma(h, pinned);
        pthread_mutex_lock(&h->lock);
    }
    return m;
}

GDEV_EXPORT struct gdev_module *gmodule_load(Ghandle h, const void *image, uint64_t size,
                                             const char *label)
{
    struct gdev_module *m;
    if (!h || !image) {
        gdev_fail(EINVAL, "gmodule_load: no handle or image");
        return NULL;
    }
    pthread_mutex_lock(&h->lock);
    m = load(h, image, size, label ? label : "<image>");
    pthread_mutex_unlock(&h->lock);
    return m;
}

GDEV_EXPORT int gmodule_unload(Ghandle h, struct gdev_module *m)
{
    struct gdev_abi_module_ref req;
    int err;
    if (!h || !m)
        return gdev_fail(EINVAL, "gmodule_unload: no handle or module");
    req.module_id = m->id;
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, GDEV_CMD_MODULE_UNLOAD, &req, sizeof req, NULL, 0, NULL, 0,
                         NULL);
    gdev_moddata_unmap(h, m->id);
    pthread_mutex_unlock(&h->lock);
    gdev_module_free(m);
    return err;
}

GDEV_EXPORT int gmodule_launch(Ghandle h, const struct gdev_module *m, uint32_t index,
                               const struct gdev_kernel *k, uint32_t *id)
{
    return gstream_module_launch(h, 0, m, index, k, id);
}

GDEV_EXPORT int gstream_module_launch(Ghandle h, uint32_t stream, const struct gdev_module *m,
                                      uint32_t index, const struct gdev_kernel *k,
                                      uint32_t *id)
{
    return gstream_module_launch_flags(h, stream, m, index, k, 0, id);
}

GDEV_EXPORT int gstream_module_launch_flags(Ghandle h, uint32_t stream,
                                            const struct gdev_module *m, uint32_t index,
                                            const struct gdev_kernel *k, uint32_t flags,
                                            uint32_t *id)
{
    struct gdev_abi_module_launch req;
    struct gdev_abi_fence out;
    int err;
    if (!h || !m || !k || index >= m->n_functions || (k->param_size && !k->param_buf))
        return gdev_fail(EINVAL, "gmodule_launch: no handle, module, function or parameters");
    req = (struct gdev_abi_module_launch){
        .module_id = m->id, .function = index, .grid_x = k->grid_x, .grid_y = k->grid_y,
        .grid_z = k->grid_z, .block_x = k->block_x, .block_y = k->block_y,
        .block_z = k->block_z, .shared_dynamic = k->smem_size, .params_len = k->param_size,
        .stream = stream, .flags = flags};
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, GDEV_CMD_MODULE_LAUNCH, &req, sizeof req, k->param_buf,
                         k->param_size, &out, sizeof out, NULL);
    pthread_mutex_unlock(&h->lock);
    if (!err && id)
        *id = out.id;
    return err;
}
