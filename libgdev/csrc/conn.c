/* One session's socket: requests out, replies in order, passed descriptors, spin-then-block
 * (libgdev/connection.py and libgdev/spin.py).  Every reply is validated before use; a
 * framing error loses the byte stream, so the connection is then marked broken. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gdev_internal.h"

#define MAX_SKIP 64
#define RX_CAP (GDEV_ABI_HEADER_SIZE + GDEV_ABI_MAX_PAYLOAD)

static long spin_ns = -1; /* LIBGDEV_SPIN_US, default 100 us with two CPUs or more */

static long spin_window_ns(void)
{
    if (spin_ns < 0) {
        const char *env = getenv("LIBGDEV_SPIN_US");
        cpu_set_t set;
        long us = 100;
        if (env && *env)
            us = atol(env);
        else if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2)
            us = 0;
        spin_ns = us > 0 ? us * 1000 : 0;
    }
    return spin_ns;
}

int gdev_conn_open(struct gdev_conn *c, const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};

    memset(c, 0, sizeof *c);
    c->next_id = 1;
    if (strlen(path) >= sizeof addr.sun_path)
        return gdev_fail(ENAMETOOLONG, "socket path %s", path);
    strcpy(addr.sun_path, path);
    c->rx = malloc(RX_CAP);
    if (!c->rx)
        return gdev_fail(ENOMEM, "receive buffer");
    c->rx_cap = RX_CAP;
    c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->sock < 0 || connect(c->sock, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int err = errno;
        if (c->sock >= 0)
            close(c->sock);
        free(c->rx);
        c->rx = NULL;
        return gdev_fail(err, "connecting to gdevd at %s", path);
    }
    return 0;
}

void gdev_conn_close(struct gdev_conn *c)
{
    if (c->sock >= 0)
        close(c->sock);
    c->sock = -1;
    while (c->nfds)
        close(c->fds[--c->nfds]);
    free(c->rx);
    c->rx = NULL;
}

size_t gdev_abi_encode_head(uint8_t *buf, uint32_t cmd, uint64_t rid, size_t payload_len,
                            const void *args, size_t args_len)
{
    struct gdev_abi_header h = {
        .magic = GDEV_ABI_MAGIC, .version = GDEV_ABI_VERSION, .flags = 0, .command = cmd,
        .payload_len = (uint32_t)payload_len, .request_id = rid, .reserved = 0,
    };
    memcpy(buf, &h, sizeof h);
    if (args_len)
        memcpy(buf + sizeof h, args, args_len);
    return sizeof h + args_len;
}

static int fail_broken(struct gdev_conn *c, int err, const char *what)
{
    c->broken = 1;
    return gdev_fail(err, "%s", what);
}

int gdev_conn_send(struct gdev_conn *c, uint32_t cmd, const void *args, size_t args_len,
                   const void *tail, size_t tail_len, uint64_t *rid)
{
    uint8_t head[GDEV_ABI_HEADER_SIZE + 256];
    struct iovec iov[2];
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = tail_len ? 2 : 1};
    size_t total, sent = 0;

    if (c->broken)
        return gdev_fail(EPIPE, "%s: daemon connection lost", gdev_command_name(cmd));
    if (args_len > 256 || args_len + tail_len > GDEV_ABI_MAX_PAYLOAD)
        return gdev_fail(EINVAL, "%s: payload of %zu bytes", gdev_command_name(cmd),
                         args_len + tail_len);
    *rid = c->next_id++;
    iov[0].iov_base = head;
    iov[0].iov_len = gdev_abi_encode_head(head, cmd, *rid, args_len + tail_len, args, args_len);
    iov[1].iov_base = (void *)tail;
    iov[1].iov_len = tail_len;
    total = iov[0].iov_len + tail_len;
    while (sent < total) {
        ssize_t n = sendmsg(c->sock, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail_broken(c, errno, "daemon connection lost");
        }
        sent += (size_t)n;
        while (msg.msg_iovlen && (size_t)n >= msg.msg_iov[0].iov_len) {
            n -= (ssize_t)msg.msg_iov[0].iov_len;
            msg.msg_iov++;
            msg.msg_iovlen--;
        }
        if (msg.msg_iovlen) {
            msg.msg_iov[0].iov_base = (uint8_t *)msg.msg_iov[0].iov_base + n;
            msg.msg_iov[0].iov_len -= (size_t)n;
        }
    }
    return 0;
}

static void take_fds(struct gdev_conn *c, struct msghdr *msg)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *fds = (int *)CMSG_DATA(cm);
        for (size_t i = 0; i < n; i++) {
            if (c->nfds < GDEV_MAX_FDS)
                c->fds[c->nfds++] = fds[i];
            else
                close(fds[i]); /* more than any reply passes: a confused daemon */
        }
    }
}

static struct gdev_spin *spin_of(struct gdev_conn *c, uint32_t cmd)
{
    for (int i = 0; i < c->nspins; i++)
        if (c->spins[i].command == cmd)
            return &c->spins[i];
    if (c->nspins == GDEV_MAX_SPINS)
        return NULL;
    c->spins[c->nspins] = (struct gdev_spin){.command = cmd, .skip = 0, .backoff = 1};
    return &c->spins[c->nspins++];
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One recvmsg into the free end of rx; with spin, poll nonblocking up to the window first.
 * Returns the bytes received, or a negative errno (0 bytes: the daemon closed). */
static ssize_t recv_some(struct gdev_conn *c, struct gdev_spin *spin)
{
    union { char buf[CMSG_SPACE(GDEV_MAX_FDS * sizeof(int))]; struct cmsghdr align; } ctl;
    struct iovec iov = {.iov_base = c->rx + c->rx_len, .iov_len = c->rx_cap - c->rx_len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    long window = spin_window_ns();
    int flags = MSG_CMSG_CLOEXEC;
    uint64_t deadline = 0;
    ssize_t n;

    if (spin && window && spin->skip) {
        spin->skip--;
        spin = NULL;
    } else if (spin && window) {
        flags |= MSG_DONTWAIT;
        deadline = now_ns() + (uint64_t)window;
    }
    for (;;) {
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof ctl.buf;
        n = recvmsg(c->sock, &msg, flags);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN || !(flags & MSG_DONTWAIT))
            return -errno;
        if (now_ns() > deadline) {
            spin->skip = spin->backoff; /* the poll missed: back off (spin.py) */
            spin->backoff = spin->backoff * 2 > MAX_SKIP ? MAX_SKIP : spin->backoff * 2;
            flags &= ~MSG_DONTWAIT;
            spin = NULL;
        }
    }
    if (spin && (flags & MSG_DONTWAIT))
        spin->backoff = 1;
    take_fds(c, &msg);
    c->rx_len += (size_t)n;
    return n;
}

/* Make rx hold one whole frame at rx_off; its header.  0 or a negative errno. */
static int read_frame(struct gdev_conn *c, struct gdev_spin *spin, struct gdev_abi_header *h)
{
    for (;;) {
        size_t have = c->rx_len - c->rx_off;
        if (have >= sizeof *h) {
            memcpy(h, c->rx + c->rx_off, sizeof *h);
            if (h->magic != GDEV_ABI_MAGIC)
                return fail_broken(c, EPROTO, "bad magic in a reply");
            if (h->payload_len > GDEV_ABI_MAX_PAYLOAD)
                return fail_broken(c, EPROTO, "oversized reply");
            if (have >= sizeof *h + h->payload_len)
                return 0;
        }
        if (c->rx_off) { /* compact: the frame must fit whole */
            memmove(c->rx, c->rx + c->rx_off, have);
            c->rx_len = have;
            c->rx_off = 0;
        }
        ssize_t n = recv_some(c, spin);
        spin = NULL;
        if (n < 0)
            return fail_broken(c, (int)-n, "daemon connection lost");
        if (n == 0)
            return fail_broken(c, ECONNRESET, "the daemon closed the session");
    }
}

int gdev_conn_receive(struct gdev_conn *c, uint32_t cmd, uint64_t rid, void *out,
                      size_t out_size, struct gdev_reply *reply, int spin)
{
    struct gdev_abi_header h;
    struct gdev_abi_status st;
    const char *name = gdev_command_name(cmd);
    int err;

    if (c->broken)
        return gdev_fail(EPIPE, "%s: daemon connection lost", name);
    err = read_frame(c, spin ? spin_of(c, cmd) : NULL, &h);
    if (err)
        return err;
    const uint8_t *body = c->rx + c->rx_off + sizeof h;
    c->rx_off += sizeof h + h.payload_len;
    if (h.version != GDEV_ABI_VERSION || h.flags != GDEV_ABI_FLAG_REPLY || h.command != cmd
        || h.request_id != rid || h.reserved || h.payload_len < sizeof st)
        return fail_broken(c, EPROTO, "reply out of step with its request");
    memcpy(&st, body, sizeof st);
    if (st.status < 0 || (st.msg_len && !st.status) || st.msg_len > GDEV_ABI_MSG_MAX)
        return fail_broken(c, EPROTO, "malformed reply status");
    if (st.status) { /* the daemon's reason follows: carried to the user */
        if (h.payload_len != sizeof st + st.msg_len)
            return fail_broken(c, EPROTO, "error reply with a body");
        return gdev_fail(st.status, "%s: %.*s", name, (int)st.msg_len, body + sizeof st);
    }
    if (h.payload_len < sizeof st + out_size
        || (!gdev_reply_has_tail(cmd) && h.payload_len != sizeof st + out_size))
        return fail_broken(c, EPROTO, "reply of the wrong size");
    if (out_size)
        memcpy(out, body + sizeof st, out_size);
    reply->tail = body + sizeof st + out_size;
    reply->tail_len = h.payload_len - sizeof st - out_size;
    reply->fd = -1;
    if (gdev_passes_fd(cmd)) { /* such a reply brings its fd with its own bytes */
        if (!c->nfds)
            return fail_broken(c, EPROTO, "reply without its file descriptor");
        reply->fd = c->fds[0];
        memmove(c->fds, c->fds + 1, (size_t)--c->nfds * sizeof(int));
    }
    return 0;
}

int gdev_conn_call(struct gdev_conn *c, uint32_t cmd, const void *args, size_t args_len,
                   const void *tail, size_t tail_len, void *out, size_t out_size,
                   struct gdev_reply *reply)
{
    struct gdev_reply r;
    uint64_t rid;
    int err = gdev_conn_send(c, cmd, args, args_len, tail, tail_len, &rid);
    if (err)
        return err;
    err = gdev_conn_receive(c, cmd, rid, out, out_size, reply ? reply : &r, 1);
    if (!err && !reply && r.fd >= 0)
        close(r.fd);
    return err;
}
