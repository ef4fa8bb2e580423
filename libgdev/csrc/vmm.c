/* CUDA's virtual memory management as Gdev verbs (the GVM_* commands): reservations,
 * allocation ids, maps, access, and sharing an allocation through a file descriptor.
 * Every value is checked by the daemon (gdevd/runtime/api_vmm.py); here each verb is one
 * round trip, and gvm_export/gvm_import carry the token between the fd and the wire. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "gdev_internal.h"

GDEV_EXPORT int gvm_reserve(Ghandle h, uint64_t size, uint64_t align, uint64_t addr,
                            uint64_t *va)
{
    struct gdev_abi_vm_reserve req = {.size = size, .align = align, .addr = addr};
    struct gdev_abi_addr out;
    int err = gdev_call(h, GDEV_CMD_GVM_RESERVE, &req, sizeof req, &out, sizeof out);
    if (!err && va)
        *va = out.addr;
    return err;
}

GDEV_EXPORT int gvm_free(Ghandle h, uint64_t addr, uint64_t size)
{
    struct gdev_abi_vm_range req = {.addr = addr, .size = size};
    return gdev_call(h, GDEV_CMD_GVM_FREE, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gvm_create(Ghandle h, uint64_t size, uint64_t *mem)
{
    struct gdev_abi_size req = {.size = size};
    struct gdev_abi_vm_mem out;
    int err = gdev_call(h, GDEV_CMD_GVM_CREATE, &req, sizeof req, &out, sizeof out);
    if (!err && mem)
        *mem = out.mem;
    return err;
}

GDEV_EXPORT int gvm_release(Ghandle h, uint64_t mem)
{
    struct gdev_abi_vm_mem req = {.mem = mem};
    return gdev_call(h, GDEV_CMD_GVM_RELEASE, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gvm_map(Ghandle h, uint64_t addr, uint64_t size, uint64_t offset,
                        uint64_t mem)
{
    struct gdev_abi_vm_map req = {.addr = addr, .size = size, .offset = offset, .mem = mem};
    return gdev_call(h, GDEV_CMD_GVM_MAP, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gvm_unmap(Ghandle h, uint64_t addr, uint64_t size)
{
    struct gdev_abi_vm_range req = {.addr = addr, .size = size};
    return gdev_call(h, GDEV_CMD_GVM_UNMAP, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gvm_set_access(Ghandle h, uint64_t addr, uint64_t size, uint32_t flags)
{
    struct gdev_abi_vm_access req = {.addr = addr, .size = size, .flags = flags, ._pad0 = 0};
    return gdev_call(h, GDEV_CMD_GVM_SET_ACCESS, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gvm_get_access(Ghandle h, uint64_t addr, uint32_t *flags)
{
    struct gdev_abi_addr req = {.addr = addr};
    struct gdev_abi_vm_flags out;
    int err = gdev_call(h, GDEV_CMD_GVM_GET_ACCESS, &req, sizeof req, &out, sizeof out);
    if (!err && flags)
        *flags = out.flags;
    return err;
}

GDEV_EXPORT int gvm_retain(Ghandle h, uint64_t addr, uint64_t *mem)
{
    struct gdev_abi_addr req = {.addr = addr};
    struct gdev_abi_vm_mem out;
    int err = gdev_call(h, GDEV_CMD_GVM_RETAIN, &req, sizeof req, &out, sizeof out);
    if (!err && mem)
        *mem = out.mem;
    return err;
}

GDEV_EXPORT int gvm_size(Ghandle h, uint64_t mem, uint64_t *size)
{
    struct gdev_abi_vm_mem req = {.mem = mem};
    struct gdev_abi_size out;
    int err = gdev_call(h, GDEV_CMD_GVM_SIZE, &req, sizeof req, &out, sizeof out);
    if (!err && size)
        *size = out.size;
    return err;
}

GDEV_EXPORT int gvm_export(Ghandle h, uint64_t mem, int *fd)
{
    struct gdev_abi_vm_mem req = {.mem = mem};
    struct gdev_reply r;
    int err;

    if (!h || !fd)
        return gdev_fail(EINVAL, "gvm_export: no handle or no place for the fd");
    pthread_mutex_lock(&h->lock);
    err = gdev_conn_call(&h->conn, GDEV_CMD_GVM_EXPORT, &req, sizeof req, NULL, 0, NULL, 0, &r);
    pthread_mutex_unlock(&h->lock);
    if (!err)
        *fd = r.fd;
    return err;
}

GDEV_EXPORT int gvm_import(Ghandle h, int fd, uint64_t *mem)
{
    struct gdev_abi_vm_token req;
    struct gdev_abi_vm_mem out;
    ssize_t n;
    int err;

    memset(&req, 0, sizeof req);
    n = pread(fd, req.token, sizeof req.token, 0);
    if (n < 0)
        return gdev_fail(EINVAL, "gvm_import: shareable handle %d: %s", fd, strerror(errno));
    err = gdev_call(h, GDEV_CMD_GVM_IMPORT, &req, sizeof req, &out, sizeof out);
    if (!err && mem)
        *mem = out.mem;
    return err;
}
