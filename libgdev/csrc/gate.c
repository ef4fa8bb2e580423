/* The gate: open MOUNT/dev/gdevN and read its session ticket (libgdev/gate.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdev_internal.h"

const char *gdev_mount(void)
{
    const char *m = getenv("GDEV_MOUNT");
    return m && *m ? m : GDEV_DEFAULT_MOUNT;
}

/* Record why `path`, a file of the mount, did not open (errno `err`) and what to do, as
 * libgdev/gate.py's open_failure says it: no daemon, a stale mount, or the path itself.
 * Returns -err (or -ENODEV where the caller asks for it through `as`). */
int gdev_mount_failure(const char *what, const char *path, int err, int as)
{
    const char *m = gdev_mount(), *env = getenv("GDEV_MOUNT");
    char envtext[4200], proc[4200];
    struct stat st;

    if (env && *env)
        snprintf(envtext, sizeof envtext, "GDEV_MOUNT=%s", env);
    else
        snprintf(envtext, sizeof envtext, "GDEV_MOUNT unset, default %s", GDEV_DEFAULT_MOUNT);
    snprintf(proc, sizeof proc, "%s/proc/gdev", m);
    if (err == ENOTCONN)
        return gdev_fail(as, "%s: gdevd at %s is gone and left a stale mount (%s): clear it "
                         "with `fusermount3 -u %s`, then start it with `gdevd %s`",
                         what, m, envtext, m, m);
    if (err == ENOENT && (stat(proc, &st) < 0 || !S_ISDIR(st.st_mode)))
        return gdev_fail(as, "%s: no gdevd at %s (%s): start it with `gdevd %s`",
                         what, m, envtext, m);
    return gdev_fail(as, "%s: %s", what, path);
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
        return gdev_mount_failure("gopen", path, errno, errno);
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
