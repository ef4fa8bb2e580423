/* Passing a file descriptor and a few bytes over a Unix socket (SCM_RIGHTS), for the test
 * programs that share memory between two processes by descriptor. */
#ifndef FDPASS_H
#define FDPASS_H
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Send fd with the n bytes at data (n >= 1); 0, or -1 on failure. */
static inline int send_fd(int sock, int fd, const void *data, size_t n)
{
    struct iovec iov = {(void *)data, n};
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &m, 0) == (ssize_t)n ? 0 : -1;
}

/* Receive a descriptor and the n bytes sent with it into data; the descriptor, or -1. */
static inline int recv_fd(int sock, void *data, size_t n)
{
    struct iovec iov = {data, n};
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
    int fd = -1;
    if (recvmsg(sock, &m, MSG_WAITALL) != (ssize_t)n || !CMSG_FIRSTHDR(&m))
        return -1;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
    return fd;
}
#endif
