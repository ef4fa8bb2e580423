/* The integrity check of NVIDIA's static runtime (export.c): the runtime asks the driver for
 * an HMAC-MD2 (RFC 1319, RFC 2104) under a fixed key of values both sides know: the driver
 * and check versions, the process and thread, the addresses of the two export tables and of
 * the check function, the runtime's clock, and each device's UUID and PCI location.  It
 * computes the same and refuses to start on a mismatch ("integrity checks failed"). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

/* MD2's substitution table: a permutation of 0..255 built from the digits of pi. */
static const unsigned char PI_SUBST[256] = {
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243,
    192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202, 30, 155, 87, 60, 253, 212,
    224, 22, 103, 66, 111, 24, 138, 23, 229, 18, 190, 78, 196, 214, 218, 158, 222, 73, 160,
    251, 245, 142, 187, 47, 238, 122, 169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137,
    11, 34, 95, 33, 128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
    255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56,
    210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241, 69, 157, 112, 89, 100,
    113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2, 27, 96, 37, 173, 174, 176, 185, 246,
    28, 70, 97, 105, 52, 64, 126, 15, 85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206,
    186, 197, 234, 38, 44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77,
    82, 106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74, 120, 136,
    149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57, 242, 239, 183, 14, 102,
    88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26,
    219, 153, 141, 51, 159, 17, 131, 20};

struct md2 {
    unsigned char x[48];  /* state (16 bytes), block, state ^ block */
    unsigned char sum[16]; /* the running checksum */
    unsigned char n, last; /* bytes of the block so far; the checksum's last byte */
};

static void md2_byte(struct md2 *m, unsigned char b)
{
    unsigned i = m->n;
    m->x[16 + i] = b;
    m->x[32 + i] = m->x[i] ^ b;
    m->last = m->sum[i] ^= PI_SUBST[b ^ m->last];
    m->n = (i + 1) & 15;
    if (m->n)
        return;
    unsigned t = 0;
    for (unsigned round = 0; round < 18; round++) {
        for (unsigned k = 0; k < 48; k++)
            t = m->x[k] ^= PI_SUBST[t];
        t = (t + round) & 255;
    }
}

static void md2_update(struct md2 *m, const void *p, size_t n, unsigned char mask)
{
    for (size_t i = 0; i < n; i++)
        md2_byte(m, ((const unsigned char *)p)[i] ^ mask);
}

static void md2_final(struct md2 *m, unsigned char out[16])
{
    unsigned char pad = (unsigned char)(16 - m->n), sum[16];
    for (unsigned i = 0; i < pad; i++)
        md2_byte(m, pad);
    memcpy(sum, m->sum, sizeof sum);
    md2_update(m, sum, sizeof sum, 0);
    memcpy(out, m->x, 16);
}

/* The HMAC key (one MD2 block) and the answers to check versions ending in 0 and 1. */
static const unsigned char KEY[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                      0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
static const uint64_t FIXED[2][2] = {{0x3341181c03cb675cULL, 0x8ed383aa1f4cd1e8ULL},
                                     {0x1841181c03cb675cULL, 0x8ed383aa1f4cd1e8ULL}};

/* What is hashed for each device (the layout is part of the protocol). */
struct device_mix {
    CUuuid uuid;
    int pci_domain, pci_bus, pci_device;
};

static void mix_devices(struct md2 *m)
{
    int n = 0;
    cuDeviceGetCount(&n);
    for (int d = 0; d < n; d++) {
        struct device_mix x;
        memset(&x, 0, sizeof x);
        cuDeviceGetUuid_v2(&x.uuid, d);
        cuDeviceGetAttribute(&x.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
        cuDeviceGetAttribute(&x.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
        cuDeviceGetAttribute(&x.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
        md2_update(m, &x, sizeof x, 0);
    }
}

void cu_integrity_hash(uint32_t version, uint64_t seconds, const void *cudart_table,
                       const void *check_table, const void *check_fn, uint64_t out[2])
{
    if (version % 10 < 2) {
        memcpy(out, FIXED[version % 10], 16);
        return;
    }
    struct {
        uint32_t driver, version, pid, thread;
        const void *cudart_table, *check_table, *check_fn;
        uint64_t seconds;
    } in;
    int driver = 0;
    memset(&in, 0, sizeof in);
    cuDriverGetVersion(&driver);
    in.driver = (uint32_t)driver;
    in.version = version;
    in.pid = (uint32_t)getpid();
    in.thread = (uint32_t)pthread_self(); /* the low half, as the runtime takes it */
    in.cudart_table = cudart_table;
    in.check_table = check_table;
    in.check_fn = check_fn;
    in.seconds = seconds;
    struct md2 m;
    unsigned char inner[16];
    memset(&m, 0, sizeof m);
    md2_update(&m, KEY, sizeof KEY, 0x36);
    md2_update(&m, &in, sizeof in, 0);
    mix_devices(&m);
    md2_final(&m, inner);
    memset(&m, 0, sizeof m);
    md2_update(&m, KEY, sizeof KEY, 0x5c);
    md2_update(&m, inner, sizeof inner, 0);
    md2_final(&m, (unsigned char *)out);
}
