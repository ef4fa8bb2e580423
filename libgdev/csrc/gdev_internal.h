/* Internals of libgdev.so shared by its files: the connection, the handle, errors. */
#ifndef GDEV_INTERNAL_H
#define GDEV_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gdev.h"

#define GDEV_DEFAULT_MOUNT "/run/gdev"
#define GDEV_DIRECT_MAX (32u << 10) /* pageable copies up to this ride inline (handle.py) */
#define GDEV_MAX_FDS 8
#define GDEV_MAX_SPINS 32
#ifndef GDEV_EXPORT /* libcuda.so.1 builds the same files with the verbs hidden */
#define GDEV_EXPORT __attribute__((visibility("default")))
#endif

/* Spin-then-block state of one command (libgdev/spin.py's AdaptiveSpin). */
struct gdev_spin {
    uint32_t command;
    uint32_t skip;
    uint32_t backoff;
};

/* One session's socket.  Replies come in request order; rx holds received bytes not yet
 * consumed, [rx_off, rx_len); passed descriptors queue in fds until a reply takes one. */
struct gdev_conn {
    int sock;
    int broken; /* the byte stream is lost: every later call fails with EPIPE */
    uint64_t next_id;
    uint8_t *rx;
    size_t rx_off, rx_len, rx_cap;
    int fds[GDEV_MAX_FDS];
    int nfds;
    struct gdev_spin spins[GDEV_MAX_SPINS];
    int nspins;
};

/* A successful reply: the output struct was copied out; tail points into the receive buffer
 * (valid until the next receive) and fd is the passed descriptor or -1. */
struct gdev_reply {
    const uint8_t *tail;
    size_t tail_len;
    int fd;
};

int gdev_conn_open(struct gdev_conn *c, const char *path);
void gdev_conn_close(struct gdev_conn *c);
int gdev_conn_send(struct gdev_conn *c, uint32_t cmd, const void *args, size_t args_len,
                   const void *tail, size_t tail_len, uint64_t *rid);
int gdev_conn_receive(struct gdev_conn *c, uint32_t cmd, uint64_t rid, void *out,
                      size_t out_size, struct gdev_reply *reply, int spin);
int gdev_conn_call(struct gdev_conn *c, uint32_t cmd, const void *args, size_t args_len,
                   const void *tail, size_t tail_len, void *out, size_t out_size,
                   struct gdev_reply *reply);
size_t gdev_abi_encode_head(uint8_t *buf, uint32_t cmd, uint64_t rid, size_t payload_len,
                            const void *args, size_t args_len);

/* A pinned buffer from gmalloc_dma, mapped at base. */
struct gdev_dma {
    uint64_t buf_id, addr, size;
    uint8_t *base;
    struct gdev_dma *next;
};

struct gdev_handle {
    int fd; /* the device file: the gate; closing it ends the session */
    int minor;
    uint64_t session;
    pthread_mutex_t lock; /* one call at a time on the connection */
    struct gdev_conn conn;
    struct gdev_dma *dma;
    struct gdev_dma *moddata; /* modules' pinned data segments (gmodule_data; buf_id: module) */
    uint8_t *staging; /* NULL until the first staged copy */
    uint64_t staging_size, chunk;
    uint32_t slots;
};

struct gdev_dma *gdev_find_dma(Ghandle h, const void *p, uint64_t size);
/* Maps size bytes of shared memory fd (closed) at addr in this process; NULL if taken. */
uint8_t *gdev_map_at(int fd, uint64_t size, uint64_t addr);
/* Lets go of module `id`'s data segment (all of them for id 0), keeping its last bytes at its
 * address (moddata.c); the handle's lock held or not. */
void gdev_moddata_unmap(Ghandle h, uint64_t id);
/* Drops the kept copies overlapping [at, at + size), for a new mapping there. */
void gdev_moddata_evict(const void *at, uint64_t size);
void gdev_module_free(struct gdev_module *m);
int gdev_copy_to_device(Ghandle h, uint32_t cmd, uint64_t dst, const void *src,
                        uint64_t size, uint32_t stream, uint32_t *id);
int gdev_copy_from_device(Ghandle h, uint32_t cmd, void *dst, uint64_t src, uint64_t size,
                          uint32_t stream, uint32_t *id);

/* Ticket of an open device file (libgdev/gate.py). */
struct gdev_ticket {
    int minor;
    char socket[256];
    uint8_t token[GDEV_ABI_TOKEN_SIZE];
};
int gdev_open_gate(int minor, int *fd, struct gdev_ticket *t);
const char *gdev_mount(void);
/* Record why a file of the mount did not open, naming the fix; returns -as. */
int gdev_mount_failure(const char *what, const char *path, int err, int as);

/* One round trip of a one-message verb under the handle's lock; 0 or a negative errno. */
int gdev_call(Ghandle h, uint32_t cmd, const void *args, size_t args_len, void *out,
              size_t out_size);

/* Record the calling thread's failure reason; returns -err for `return gdev_fail(...)`. */
int gdev_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *gdev_command_name(uint32_t cmd);
int gdev_last_errno(void); /* the errno of the thread's last failure */
int gdev_passes_fd(uint32_t cmd);
int gdev_reply_has_tail(uint32_t cmd);

#endif /* GDEV_INTERNAL_H */
