/* CUDA IPC as Gdev verbs (the GIPC_* commands): a device allocation or an interprocess
 * event shared between processes by a 64-byte handle that carries the daemon's record id
 * and a 128-bit secret (libgdev/ipchandle.py).  The daemon checks every value
 * (gdevd/runtime/api_ipc.py); here each verb is one round trip. */
#include <errno.h>
#include <string.h>

#include "gdev_internal.h"

GDEV_EXPORT int gipc_export(Ghandle h, uint64_t addr, uint8_t handle[GDEV_IPC_HANDLE_SIZE])
{
    struct gdev_abi_addr req = {.addr = addr};
    struct gdev_abi_ipc_token out;
    int err = gdev_call(h, GDEV_CMD_GIPC_EXPORT, &req, sizeof req, &out, sizeof out);
    if (!err)
        memcpy(handle, out.handle, sizeof out.handle);
    return err;
}

GDEV_EXPORT int gipc_open(Ghandle h, const uint8_t handle[GDEV_IPC_HANDLE_SIZE],
                          uint64_t *addr, uint64_t *size)
{
    struct gdev_abi_ipc_token req;
    struct gdev_abi_ipc_mapping out;
    memcpy(req.handle, handle, sizeof req.handle);
    int err = gdev_call(h, GDEV_CMD_GIPC_OPEN, &req, sizeof req, &out, sizeof out);
    if (!err) {
        *addr = out.addr;
        if (size)
            *size = out.size;
    }
    return err;
}

GDEV_EXPORT int gipc_close(Ghandle h, uint64_t addr)
{
    struct gdev_abi_addr req = {.addr = addr};
    return gdev_call(h, GDEV_CMD_GIPC_CLOSE, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gipc_event_new(Ghandle h, uint8_t handle[GDEV_IPC_HANDLE_SIZE])
{
    struct gdev_abi_ipc_token out;
    int err = gdev_call(h, GDEV_CMD_GIPC_EVENT_NEW, NULL, 0, &out, sizeof out);
    if (!err)
        memcpy(handle, out.handle, sizeof out.handle);
    return err;
}

GDEV_EXPORT int gipc_event_open(Ghandle h, const uint8_t handle[GDEV_IPC_HANDLE_SIZE],
                                uint32_t *event)
{
    struct gdev_abi_ipc_token req;
    struct gdev_abi_ipc_event out;
    memcpy(req.handle, handle, sizeof req.handle);
    int err = gdev_call(h, GDEV_CMD_GIPC_EVENT_OPEN, &req, sizeof req, &out, sizeof out);
    if (!err)
        *event = out.event;
    return err;
}

GDEV_EXPORT int gipc_event_record(Ghandle h, uint32_t event, uint32_t stream)
{
    struct gdev_abi_ipc_event_stream req = {.event = event, .stream = stream};
    return gdev_call(h, GDEV_CMD_GIPC_EVENT_RECORD, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gipc_event_sync(Ghandle h, uint32_t event, const struct gdev_time *timeout)
{
    struct gdev_abi_ipc_event_sync req = {.event = event};
    if (timeout) {
        req.flags = GDEV_ABI_IPC_SYNC_TIMEOUT;
        req.timeout_us = timeout->neg ? 0 : timeout->sec * 1000000u + timeout->usec;
    }
    return gdev_call(h, GDEV_CMD_GIPC_EVENT_SYNC, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gipc_event_wait(Ghandle h, uint32_t stream, uint32_t event)
{
    struct gdev_abi_ipc_event_stream req = {.event = event, .stream = stream};
    return gdev_call(h, GDEV_CMD_GIPC_EVENT_WAIT, &req, sizeof req, NULL, 0);
}

GDEV_EXPORT int gipc_event_close(Ghandle h, uint32_t event)
{
    struct gdev_abi_ipc_event req = {.event = event, ._pad0 = 0};
    return gdev_call(h, GDEV_CMD_GIPC_EVENT_CLOSE, &req, sizeof req, NULL, 0);
}
