/* gdev.h: Gdev's user API (common/gdev_api.h) over gdevd's socket ABI.
 *
 * Names, signatures and return conventions are Gdev's: allocations return an address or a
 * pointer (0/NULL on failure), gfree* the size freed (0 on failure), the other int calls 0
 * or a negative errno.  Where Gdev has no room for a reason, gdev_last_error() gives the
 * last failure of the calling thread in words.  Link with -lgdev.
 */
#ifndef GDEV_H
#define GDEV_H

#include <stdint.h>

#include "gdev_abi.h" /* GDEV_QUERY_*, GDEV_TUNE_*, GDEV_IPC_* */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gdev_handle *Ghandle;

/* A signed time value (common/gdev_time.h). */
struct gdev_time {
    uint64_t sec;
    uint64_t usec;
    int neg;
};

/* A launch descriptor: Gdev's struct gdev_kernel reduced to what PTX needs.  code_addr and
 * code_size name the module's PTX text in device memory, data_addr its data segment (0 if
 * none); name is the entry; param_buf/param_size the packed parameters. */
/* The largest parameter buffer of a launch: CUDA 12.1's limit for Volta and later (32764
 * bytes; 4096 before, and still 4096 for the legacy cuParamSet* path). */
#define GDEV_PARAM_MAX 32764

struct gdev_kernel {
    uint64_t code_addr;
    uint64_t code_size;
    uint64_t data_addr;
    const char *name;
    const void *param_buf;
    uint32_t param_size;
    uint32_t smem_size; /* dynamic shared memory, bytes */
    uint32_t grid_x, grid_y, grid_z;
    uint32_t block_x, block_y, block_z;
};

/* What gshmctl(GDEV_IPC_STAT) fills in and GDEV_IPC_SET reads (uid, gid, mode). */
typedef struct gdev_abi_shmid_ds gdev_shmid_ds;

Ghandle gopen(int minor);
int gclose(Ghandle h);
uint64_t gmalloc(Ghandle h, uint64_t size);
uint64_t gfree(Ghandle h, uint64_t addr);
/* gdev-py: the buffer is mapped at its own GPU virtual address when that range of this process
 * is free (so the pointer itself reaches kernels, as under CUDA's unified addressing), else
 * anywhere; gvirtget gives its GPU address either way. */
void *gmalloc_dma(Ghandle h, uint64_t size);
/* gdev-py: a pinned buffer mapped in this process at its own GPU virtual address, so that
 * one pointer serves the host and kernels (CUDA's managed memory); freed by gfree_dma.
 * NULL if that address range of the process is taken (gdev_last_error says so). */
void *gmalloc_unified(Ghandle h, uint64_t size);
uint64_t gfree_dma(Ghandle h, void *buf);
int gmemcpy_to_device(Ghandle h, uint64_t dst_addr, const void *src_buf, uint64_t size);
int gmemcpy_to_device_async(Ghandle h, uint64_t dst_addr, const void *src_buf, uint64_t size,
                            uint32_t *id);
int gmemcpy_from_device(Ghandle h, void *dst_buf, uint64_t src_addr, uint64_t size);
int gmemcpy_from_device_async(Ghandle h, void *dst_buf, uint64_t src_addr, uint64_t size,
                              uint32_t *id);
int gmemcpy(Ghandle h, uint64_t dst_addr, uint64_t src_addr, uint64_t size);
int gmemcpy_async(Ghandle h, uint64_t dst_addr, uint64_t src_addr, uint64_t size,
                  uint32_t *id);
int glaunch(Ghandle h, struct gdev_kernel *kernel, uint32_t *id);
int gsync(Ghandle h, uint32_t id, struct gdev_time *timeout);
int gbarrier(Ghandle h);
int gquery(Ghandle h, uint32_t type, uint64_t *result);
int gtune(Ghandle h, uint32_t type, uint32_t value);
/* a context limit (GDEV_LIMIT_MALLOC_HEAP_SIZE: the device heap's size): set it to value
 * (set != 0) or only read it; *result = the value in effect (gdev-py addition) */
int glimit(Ghandle h, uint32_t limit, int set, uint64_t value, uint64_t *result);
int gshmget(Ghandle h, int key, uint64_t size, int flags);
uint64_t gshmat(Ghandle h, int id, uint64_t addr, int flags);
int gshmdt(Ghandle h, uint64_t addr);
int gshmctl(Ghandle h, int id, int cmd, void *buf);
uint64_t gref(Ghandle hmaster, uint64_t addr, uint64_t size, Ghandle hslave);
int gunref(Ghandle h, uint64_t addr);
uint64_t gvirtget(Ghandle h, const void *p);
int gdevice_count(int *result);

/* CUDA's virtual memory management (gdev-py additions, docs/memory.md): a reservation is a
 * VA range with nothing mapped, an allocation (`mem`, an id of this handle) device memory
 * without an address; gvm_map puts [offset, offset + size) of it inside a reservation with
 * no access until gvm_set_access (1 read, 3 read-write, 0 none).  gvm_export gives a new
 * file descriptor (the caller closes it) that gvm_import, in any process holding it, turns
 * into an allocation id.  Each returns 0 or a negative errno (gdev_last_error: why). */
int gvm_reserve(Ghandle h, uint64_t size, uint64_t align, uint64_t addr, uint64_t *va);
int gvm_free(Ghandle h, uint64_t addr, uint64_t size);
int gvm_create(Ghandle h, uint64_t size, uint64_t *mem);
int gvm_release(Ghandle h, uint64_t mem);
int gvm_map(Ghandle h, uint64_t addr, uint64_t size, uint64_t offset, uint64_t mem);
int gvm_unmap(Ghandle h, uint64_t addr, uint64_t size);
int gvm_set_access(Ghandle h, uint64_t addr, uint64_t size, uint32_t flags);
int gvm_get_access(Ghandle h, uint64_t addr, uint32_t *flags);
int gvm_retain(Ghandle h, uint64_t addr, uint64_t *mem);
int gvm_size(Ghandle h, uint64_t mem, uint64_t *size);
int gvm_export(Ghandle h, uint64_t mem, int *fd);
int gvm_import(Ghandle h, int fd, uint64_t *mem);

/* CUDA IPC (gdev-py additions, docs/memory.md): a 64-byte handle names a device allocation
 * (gipc_export: the gmalloc block holding addr) or an interprocess event (gipc_event_new),
 * with a 128-bit secret; any context presenting it may open it (gipc_open maps the same
 * pages, the same address again for a second open; gipc_close drops one open).  An event
 * is named by its id in the context (gipc_event_open; gipc_event_new's is the handle's
 * bytes 8..11, little-endian).  Each returns 0 or a negative errno. */
#define GDEV_IPC_HANDLE_SIZE 64
int gipc_export(Ghandle h, uint64_t addr, uint8_t handle[GDEV_IPC_HANDLE_SIZE]);
int gipc_open(Ghandle h, const uint8_t handle[GDEV_IPC_HANDLE_SIZE], uint64_t *addr,
              uint64_t *size);
int gipc_close(Ghandle h, uint64_t addr);
int gipc_event_new(Ghandle h, uint8_t handle[GDEV_IPC_HANDLE_SIZE]);
int gipc_event_open(Ghandle h, const uint8_t handle[GDEV_IPC_HANDLE_SIZE], uint32_t *event);
int gipc_event_record(Ghandle h, uint32_t event, uint32_t stream);
int gipc_event_sync(Ghandle h, uint32_t event, const struct gdev_time *timeout); /* -ETIME */
int gipc_event_wait(Ghandle h, uint32_t stream, uint32_t event);
int gipc_event_close(Ghandle h, uint32_t event);

/* Modules (gdev-py additions): the daemon parses, links and lays out PTX; the client gets
 * the function table (parameter layouts, attributes) and the globals' device addresses. */
struct gdev_param {
    uint32_t offset, size, align;
    char type[9]; /* PTX type ("u64", "f32", "b8" ...), "" if unknown */
};
struct gdev_function {
    char *name;
    uint32_t n_params, param_size, max_threads, static_shared, local_size, num_regs,
        const_size, max_dynamic_shared;
    struct gdev_param *params;
    int prints; /* the kernel calls printf (GDEV_MODTAB_FUNC_PRINTS) */
};
struct gdev_global {
    char *name;
    uint64_t addr, size;
    uint32_t space; /* 0 .global, 1 .const */
};
struct gdev_module {
    uint64_t id, data_addr, data_size;
    uint32_t ptx_version, target_sm, n_functions, n_globals;
    struct gdev_function *functions;
    struct gdev_global *globals;
};

/* Load PTX text (size bytes; name labels error messages): its table, NULL on failure. */
struct gdev_module *gmodule_load(Ghandle h, const void *image, uint64_t size, const char *name);
/* Unload once the work issued before is done, and free the table. */
int gmodule_unload(Ghandle h, struct gdev_module *m);
/* The data segment of m, a module with __managed__ variables, mapped in this process at its
 * GPU address m->data_addr: the host and the kernels use the same bytes.  NULL (with
 * gdev_last_error) where its data segment is device memory.  gmodule_unload unmaps it. */
void *gmodule_data(Ghandle h, const struct gdev_module *m);
/* Launch function `index` of m with k's geometry, smem_size and param_buf/param_size (k's
 * code_addr, code_size, data_addr and name are not used); *id its fence. */
int gmodule_launch(Ghandle h, const struct gdev_module *m, uint32_t index,
                   const struct gdev_kernel *k, uint32_t *id);

/* gdev-py additions. */
int gset_priority(Ghandle h, int prio); /* 0..40, or -1 to clear; the effective priority */
int gget_priority(Ghandle h);
int gset_guest(Ghandle h, int flag);    /* 1 guest, 0 host, -1 clear; 1 if a guest now */
int gget_guest(Ghandle h);              /* 1 if a guest now, 0 if a host */

/* Streams (gdev-py): in-order channels of a handle that run side by side; 0 is the legacy
 * stream, where the verbs above run (docs/runtime.md, "Streams").  The copies are
 * asynchronous (a fence id in *id) only from or to a gmalloc_dma buffer, as gmemcpy_*_async;
 * otherwise done on return (*id 0), ordered in the stream. */
#define GDEV_STREAM_NON_BLOCKING 0x1 /* no implicit order with the legacy stream */
int gstream_create(Ghandle h, uint32_t flags, uint32_t *stream);
int gstream_destroy(Ghandle h, uint32_t stream); /* its issued work still completes */
int gstream_wait(Ghandle h, uint32_t stream, uint32_t fence); /* later work waits for fence */
int gstream_sync(Ghandle h, uint32_t stream, const struct gdev_time *timeout); /* -ETIME */
/* gdev-py: copy up to cap bytes of what the context's kernels printed (device printf), oldest
 * first, into buf: the count, 0 when there is nothing, -errno on failure (docs/abi.md). */
int64_t gprintf_drain(Ghandle h, void *buf, uint64_t cap);
int gstream_memcpy_to_device(Ghandle h, uint32_t stream, uint64_t dst_addr, const void *src_buf,
                             uint64_t size, uint32_t *id);
int gstream_memcpy_from_device(Ghandle h, uint32_t stream, void *dst_buf, uint64_t src_addr,
                               uint64_t size, uint32_t *id);
int gstream_memcpy(Ghandle h, uint32_t stream, uint64_t dst_addr, uint64_t src_addr,
                   uint64_t size, uint32_t *id); /* always asynchronous */
int gstream_module_launch(Ghandle h, uint32_t stream, const struct gdev_module *m,
                          uint32_t index, const struct gdev_kernel *k, uint32_t *id);
/* gstream_module_launch with GDEV_ABI_LAUNCH_* flags: GDEV_ABI_LAUNCH_COOPERATIVE runs every
 * block at once, with a grid workspace for grid-wide barriers (-EOVERFLOW: the grid is
 * larger than the device holds at once; docs/cuda.md) */
int gstream_module_launch_flags(Ghandle h, uint32_t stream, const struct gdev_module *m,
                                uint32_t index, const struct gdev_kernel *k, uint32_t flags,
                                uint32_t *id);
/* Texture objects (gdev-py): a descriptor (struct gdev_abi_tex_desc: CUDA's resource and
 * format numbers, GDEV_ABI_TEX_* flags, one address mode per byte of `modes`; see
 * libgdev/texture.py) entered in the context's table; *tex its opaque handle, the value a
 * kernel's .u64 texture parameter takes.  -EINVAL names a bad field in gdev_last_error(). */
int gtex_create(Ghandle h, const struct gdev_abi_tex_desc *desc, uint64_t *tex);
int gtex_destroy(Ghandle h, uint64_t tex); /* a kernel that presents it later faults */
const char *gdev_last_error(void);      /* the calling thread's last failure, in words */

#ifdef __cplusplus
}
#endif
#endif /* GDEV_H */
