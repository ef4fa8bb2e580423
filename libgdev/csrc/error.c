/* The calling thread's last failure in words: Gdev's int returns carry only an errno. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gdev_internal.h"

static _Thread_local char last_error[GDEV_ABI_MSG_MAX + 256];
static _Thread_local int last_errno;

int gdev_fail(int err, const char *fmt, ...)
{
    va_list ap;
    int n;

    last_errno = err;
    va_start(ap, fmt);
    n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n >= 2 && (size_t)n < sizeof last_error && !strcmp(last_error + n - 2, ": "))
        last_error[n -= 2] = '\0'; /* an empty message */
    if (n >= 0 && (size_t)n < sizeof last_error)
        snprintf(last_error + n, sizeof last_error - (size_t)n, ": %s", strerror(err));
    return -err;
}

int gdev_last_errno(void)
{
    return last_errno;
}

GDEV_EXPORT const char *gdev_last_error(void)
{
    return last_error;
}

const char *gdev_command_name(uint32_t cmd)
{
#define NAME(n, num, ...) case num: return #n;
    switch (cmd) {
    GDEV_ABI_COMMANDS(NAME)
    }
#undef NAME
    return "unknown command";
}

int gdev_passes_fd(uint32_t cmd)
{
#define FD(n, num, rq, rp, rqs, rps, rqt, rpt, fd) case num: return fd;
    switch (cmd) {
    GDEV_ABI_COMMANDS(FD)
    }
#undef FD
    return 0;
}

int gdev_reply_has_tail(uint32_t cmd)
{
#define TAIL(n, num, rq, rp, rqs, rps, rqt, rpt, fd) case num: return rpt;
    switch (cmd) {
    GDEV_ABI_COMMANDS(TAIL)
    }
#undef TAIL
    return 0;
}
