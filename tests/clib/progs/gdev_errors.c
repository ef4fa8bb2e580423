/* Error paths of libgdev.so, one per argument: each prints "<case> <return> <reason>" and
 * exits 0 when the call failed the way Gdev's conventions say. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdev.h"

static Ghandle h;

/* Print the outcome and its reason, then close the handle (if any). */
static int report(const char *what, long long ret, int ok)
{
    printf("%s %lld %s\n", what, ret, gdev_last_error());
    if (h && gclose(h) < 0)
        ok = 0;
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    uint64_t mem, addr;
    uint32_t word = 7, id;

    if (!strcmp(c, "no-daemon")) {
        h = gopen(0);
        return report(c, h != NULL, h == NULL);
    }
    h = gopen(0);
    if (!h)
        return report("gopen", 0, 0);
    if (!strcmp(c, "beyond-share")) {
        gquery(h, GDEV_QUERY_DEVICE_MEM_SIZE, &mem);
        addr = gmalloc(h, mem + (1 << 20));
        return report(c, (long long)addr, addr == 0);
    }
    if (!strcmp(c, "bad-pointer")) {
        int ret = gmemcpy_to_device(h, 0xdead0000ull, &word, sizeof word);
        return report(c, ret, ret < 0);
    }
    if (!strcmp(c, "bad-free")) {
        uint64_t size = gfree(h, 0xdead0000ull);
        return report(c, (long long)size, size == 0);
    }
    if (!strcmp(c, "unknown-kernel")) {
        static const char ptx[] = ".version 7.0\n.target sm_75\n.address_size 64\n";
        uint64_t code = gmalloc(h, sizeof ptx);
        struct gdev_kernel k = {.code_addr = code, .code_size = sizeof ptx, .name = "nope",
                                .grid_x = 1, .grid_y = 1, .grid_z = 1,
                                .block_x = 1, .block_y = 1, .block_z = 1};
        gmemcpy_to_device(h, code, ptx, sizeof ptx);
        int ret = glaunch(h, &k, &id);
        if (!ret)
            ret = gsync(h, id, NULL);
        return report(c, ret, ret < 0);
    }
    if (!strcmp(c, "bad-dma-free")) {
        uint64_t size = gfree_dma(h, &word);
        return report(c, (long long)size, size == 0);
    }
    if (!strcmp(c, "dma-adjacent")) { /* the start of one buffer is not the end of another */
        int ok = 1;
        for (int i = 0; i < 4 && ok; i++) {
            uint8_t *a = gmalloc_dma(h, 8192);
            uint64_t va = gvirtget(h, a);
            uint8_t *b = gmalloc_dma(h, 8192);
            uint64_t vb = gvirtget(h, b);
            ok = a && b && va && vb && gvirtget(h, a) == va && gvirtget(h, b + 8191) == vb + 8191;
            printf("a=%p b=%p ", (void *)a, (void *)b);
        }
        return report(c, 0, ok);
    }
    if (!strcmp(c, "gsync-timeout-zero")) {
        struct gdev_time t = {0, 0, 0};
        int ret = gsync(h, 0, &t); /* id 0: nothing to wait for */
        return report(c, ret, ret == 0);
    }
    if (!strcmp(c, "guest")) { /* a host's context demotes itself, and back (no error) */
        int ok = gget_guest(h) == 0 && gset_guest(h, 1) == 1 && gget_guest(h) == 1 &&
                 gset_guest(h, 0) == 0 && gset_guest(h, 1) == 1 && gset_guest(h, -1) == 0;
        return report(c, 0, ok);
    }
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
}
