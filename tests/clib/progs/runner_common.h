/* The kernel runner protocol, shared by drv_runner.c (driver API, gcc) and the generated
 * runtime-API runners (nvcc): binary commands on stdin, replies on stdout, so the Python
 * kernel tests (tests/kernels) drive real C programs on gdevd.
 *   'A' size:u64                          -> status:i32 addr:u64
 *   'W' addr:u64 n:u64 bytes              -> status:i32
 *   'R' addr:u64 n:u64                    -> status:i32 bytes (on success)
 *   'L' name_len:u32 name grid:3u32 block:3u32 shared:u32 nargs:u32 (size:u32 bytes)*
 *                                         -> status:i32   (the launch ran to completion)
 * A runner defines runner_alloc/write/read/launch returning 0 or an API error number. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int runner_alloc(uint64_t size, uint64_t *addr);
static int runner_write(uint64_t addr, const void *src, uint64_t n);
static int runner_read(void *dst, uint64_t addr, uint64_t n);
static int runner_launch(const char *name, const unsigned *grid, const unsigned *block,
                         unsigned shared, void **args);

static int get(void *p, size_t n)
{
    return fread(p, 1, n, stdin) == n;
}

static void put(const void *p, size_t n)
{
    fwrite(p, 1, n, stdout);
}

static int launch_command(void)
{
    uint32_t len, nargs, shared, sizes[64];
    unsigned grid[3], block[3];
    char name[256];
    void *args[64];
    uint8_t *data = (uint8_t *)malloc(1 << 16);
    size_t used = 0;
    int status = -1;

    if (!data || !get(&len, 4) || len >= sizeof name || !get(name, len))
        goto out;
    name[len] = '\0';
    if (!get(grid, 12) || !get(block, 12) || !get(&shared, 4) || !get(&nargs, 4) || nargs > 64)
        goto out;
    for (uint32_t i = 0; i < nargs; i++) {
        if (!get(&sizes[i], 4) || used + sizes[i] + 8 > (1 << 16) || !get(data + used, sizes[i]))
            goto out;
        args[i] = data + used;
        used += (sizes[i] + 7) & ~7u;
    }
    status = runner_launch(name, grid, block, shared, args);
out:
    free(data);
    return status;
}

static int runner_main(void)
{
    char cmd;
    while (get(&cmd, 1)) {
        uint64_t a = 0, n = 0;
        int32_t status = 0;
        uint8_t *buf;
        switch (cmd) {
        case 'A':
            if (!get(&n, 8))
                return 1;
            status = runner_alloc(n, &a);
            put(&status, 4);
            put(&a, 8);
            break;
        case 'W':
        case 'R':
            if (!get(&a, 8) || !get(&n, 8) || !(buf = (uint8_t *)malloc(n ? n : 1)))
                return 1;
            if (cmd == 'W' && !get(buf, n))
                return 1;
            status = cmd == 'W' ? runner_write(a, buf, n) : runner_read(buf, a, n);
            put(&status, 4);
            if (cmd == 'R' && !status)
                put(buf, n);
            free(buf);
            break;
        case 'L':
            status = launch_command();
            put(&status, 4);
            break;
        default:
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}
