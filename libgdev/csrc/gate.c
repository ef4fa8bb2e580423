/* The gate: open MOUNT/dev/gdevN and read its session ticket (libgdev/gate.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdev_internal.h"

const char *gdev_mount(void)
{
    const char *m = getenv("GDEV_MOUNT");
    return m && *m ? m : GDEV_DEFAULT_MOUNT;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parse "gdev-session 1\nminor N\nsocket PATH\ntoken HEX\n"; 0 or -EPROTO. */
static int parse_ticket(char *text, struct gdev_ticket *t)
{
    int have = 0;
    char *save = NULL;

    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *val = strchr(line, ' ');
        if (!val)
            return -EPROTO;
        *val++ = '\0';
        if (!strcmp(line, "gdev-session") && !strcmp(val, "1")) {
            have |= 1;
        } else if (!strcmp(line, "minor")) {
            t->minor = atoi(val);
            have |= 2;
        } else if (!strcmp(line, "socket") && strlen(val) < sizeof t->socket) {
            strcpy(t->socket, val);
            have |= 4;
        } else if (!strcmp(line, "token") && strlen(val) == 2 * GDEV_ABI_TOKEN_SIZE) {
            for (int i = 0; i < GDEV_ABI_TOKEN_SIZE; i++) {
                int hi = hexval(val[2 * i]), lo = hexval(val[2 * i + 1]);
                if (hi < 0 || lo < 0)
                    return -EPROTO;
                t->token[i] = (uint8_t)(hi << 4 | lo);
            }
            have |= 8;
        }
    }
    return have == 15 ? 0 : -EPROTO;
}

int gdev_open_gate(int minor, int *fd, struct gdev_ticket *t)
{
    char path[4096], buf[4097];
    ssize_t n;

    if (minor < 0)
        return gdev_fail(ENODEV, "gopen: minor %d", minor);
    snprintf(path, sizeof path, "%s/dev/gdev%d", gdev_mount(), minor);
    *fd = open(path, O_RDWR | O_CLOEXEC);
    if (*fd < 0)
        return gdev_fail(errno, "gopen: %s (is gdevd mounted there? GDEV_MOUNT names the mount)",
                         path);
    n = pread(*fd, buf, sizeof buf - 1, 0);
    if (n < 0) {
        int err = errno;
        close(*fd);
        return gdev_fail(err, "gopen: reading the ticket of %s", path);
    }
    buf[n] = '\0';
    if (parse_ticket(buf, t) < 0) {
        close(*fd);
        return gdev_fail(EPROTO, "gopen: %s: not a gdev-session 1 ticket", path);
    }
    return 0;
}
