/*
 * gdev_core.h - the emulated GPU's C core: device memory, MMU page tables, copy engines.
 *
 * This header is cdef-clean (cffi parses it as is): no macros with expressions, no includes.
 * Every function returns 0 or a negative errno unless its comment says otherwise.
 *
 * Theory of operation
 * -------------------
 * A physical GPU owns VRAM: one flat region, reserved with mmap(MAP_NORESERVE) so that a
 * 1 GiB device costs no RSS until pages are touched.  An address space is one gdev_mmu: a
 * two-level page table over 40-bit virtual addresses with 4 KiB pages.  A page-table entry
 * names an *aperture* (0..GDEV_APERTURES-1: a backing region registered on that mmu, e.g.
 * aperture 0 = the device's VRAM, others = pinned host buffers) and a page inside it, plus
 * access flags.  All device-side memory traffic (copies, kernels' loads/stores/atomics) goes
 * through gdev_mmu_* so that an address outside the mappings faults instead of touching
 * memory.  Vector accesses must be naturally aligned (as on a real GPU); a misaligned or
 * unmapped element makes the call return that element's index and stop.
 *
 * Copy engines run a DMA thread each.  A large copy is split into chunks that flow through
 * caller-provided bounce buffers: stage 1 (source -> bounce) and stage 2 (bounce -> dest)
 * overlap, one on the caller's thread and one on the engine's thread (the paper's split
 * transaction).  The whole range is validated before the first byte moves.
 */

#define GDEV_PAGE_SHIFT 12
#define GDEV_PAGE_SIZE 4096
#define GDEV_VA_BITS 40
#define GDEV_APERTURES 64

/* access flags of a mapping, and the access asked for by a translation */
#define GDEV_ACC_READ 1
#define GDEV_ACC_WRITE 2

/* atomic operations (gdev_*_atomic_v) */
#define GDEV_ATOM_ADD 0
#define GDEV_ATOM_MIN 1
#define GDEV_ATOM_MAX 2
#define GDEV_ATOM_EXCH 3
#define GDEV_ATOM_CAS 4
#define GDEV_ATOM_AND 5
#define GDEV_ATOM_OR 6
#define GDEV_ATOM_XOR 7
#define GDEV_ATOM_INC 8
#define GDEV_ATOM_DEC 9

/* element types of atomics */
#define GDEV_T_U32 0
#define GDEV_T_S32 1
#define GDEV_T_U64 2
#define GDEV_T_S64 3
#define GDEV_T_F32 4
#define GDEV_T_F64 5

/* the C core's version; the Python wrapper refuses to run against another */
int gdev_core_version(void);

/* ---------------------------------------------------------------------------------------
 * Device memory (vram.c)
 * ------------------------------------------------------------------------------------- */

/* reserve size bytes (MAP_NORESERVE|MAP_ANONYMOUS, zero-filled, no RSS until touched) */
int gdev_vram_alloc(uint64_t size, void **out);
/* release a region from gdev_vram_alloc; 0 or -errno */
int gdev_vram_free(void *base, uint64_t size);

/* ---------------------------------------------------------------------------------------
 * MMU page tables (mmu.c, mmu_vec.c)
 * ------------------------------------------------------------------------------------- */

struct gdev_mmu;

/* a new empty address space (refcount 1) */
int gdev_mmu_create(struct gdev_mmu **out);
/* drop a reference; the last one frees the page table (not the apertures' memory) */
void gdev_mmu_put(struct gdev_mmu *mmu);
/* take a reference (copy engines hold one per queued job) */
void gdev_mmu_get(struct gdev_mmu *mmu);

/* register (base,size) as aperture idx; base NULL unregisters.  -EBUSY while pages map it */
int gdev_mmu_set_aperture(struct gdev_mmu *mmu, int idx, void *base, uint64_t size);
/* map size bytes at va to aperture ap at pa; all-or-nothing (-EEXIST, -EINVAL, -ERANGE) */
int gdev_mmu_map(struct gdev_mmu *mmu, uint64_t va, uint64_t pa, uint64_t size, int ap,
		 int flags);
/* unmap size bytes at va; -ENOENT (nothing changed) unless every page is mapped */
int gdev_mmu_unmap(struct gdev_mmu *mmu, uint64_t va, uint64_t size);
/* translate one address: *ap, *pa; -EFAULT if unmapped, -EACCES if access not allowed */
int gdev_mmu_translate(struct gdev_mmu *mmu, uint64_t va, int access, int *ap, uint64_t *pa);
/* check that [va, va+size) is mapped with access; on failure *fault_va = first bad byte */
int gdev_mmu_check(struct gdev_mmu *mmu, uint64_t va, uint64_t size, int access,
		   uint64_t *fault_va);
/* direct path: checks the whole range first, then copies (any alignment, crosses pages) */
int gdev_mmu_read(struct gdev_mmu *mmu, uint64_t va, void *dst, uint64_t size,
		  uint64_t *fault_va);
int gdev_mmu_write(struct gdev_mmu *mmu, uint64_t va, const void *src, uint64_t size,
		   uint64_t *fault_va);
/* number of mapped pages (for invariant checks) */
uint64_t gdev_mmu_mapped_pages(struct gdev_mmu *mmu);

/* Vector accesses: return -1 on success, else the index of the first faulting element
 * (stopping there; elements before it took effect).  out[i] = (ap << 48) | pa. */
int64_t gdev_mmu_translate_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n,
			     int access, uint64_t *out);
/* width in {1,2,4,8,16}; out/values hold n elements of width bytes, naturally aligned vas */
int64_t gdev_mmu_load_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			void *out);
int64_t gdev_mmu_store_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int width,
			 const void *values);
/* atomics, serially in index order; a, b, old are arrays of n elements of typ */
int64_t gdev_mmu_atomic_v(struct gdev_mmu *mmu, const uint64_t *vas, uint64_t n, int op,
			  int typ, const void *a, const void *b, void *old);
/* the same on a flat buffer of size bytes (offsets instead of virtual addresses) */
int64_t gdev_flat_atomic_v(void *buf, uint64_t size, const uint64_t *offs, uint64_t n,
			   int op, int typ, const void *a, const void *b, void *old);

/* ---------------------------------------------------------------------------------------
 * Copy engines (copyengine.c)
 * ------------------------------------------------------------------------------------- */

#define GDEV_CHUNK_MIN 4096
#define GDEV_CHUNK_MAX 33554432
#define GDEV_DEPTH_MAX 4

/* job kinds of gdev_ce_submit */
#define GDEV_CE_HTOD 0
#define GDEV_CE_DTOH 1
#define GDEV_CE_DTOD 2

struct gdev_ce;

/* a new engine with its DMA thread and completion eventfd */
int gdev_ce_create(struct gdev_ce **out);
/* finish queued jobs, join the thread, free the engine */
void gdev_ce_destroy(struct gdev_ce *ce);
/* the eventfd: readable (counter > 0) after an async job completes */
int gdev_ce_fd(struct gdev_ce *ce);

/* synchronous copies through caller-owned bounce buffers of >= chunk*depth bytes.
 * The device range is validated first (-EFAULT/-EACCES with *fault_va, nothing moved). */
int gdev_ce_htod(struct gdev_ce *ce, struct gdev_mmu *mmu, uint64_t dst_va, const void *src,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va);
int gdev_ce_dtoh(struct gdev_ce *ce, struct gdev_mmu *mmu, void *dst, uint64_t src_va,
		 uint64_t size, uint64_t chunk, int depth, void *bounce, uint64_t bounce_size,
		 uint64_t *fault_va);
/* device to device on the engine thread, chunk by chunk; *fault_side 0 = dst, 1 = src */
int gdev_ce_dtod(struct gdev_ce *ce, struct gdev_mmu *mmu_dst, uint64_t dst_va,
		 struct gdev_mmu *mmu_src, uint64_t src_va, uint64_t size, uint64_t chunk,
		 uint64_t *fault_va, int *fault_side);

/* asynchronous job (host memory must stay valid until it completes); *seq = its number.
 * HTOD: host -> (mmu_dst, dst_va); DTOH: (mmu_src, src_va) -> host; DTOD: no host. */
int gdev_ce_submit(struct gdev_ce *ce, int kind, struct gdev_mmu *mmu_dst, uint64_t dst_va,
		   struct gdev_mmu *mmu_src, uint64_t src_va, void *host, uint64_t size,
		   uint64_t *seq, uint64_t *fault_va, int *fault_side);
/* statistics since creation: jobs run (async jobs and stages), bytes moved by the jobs
 * that succeeded, nanoseconds the engine spent copying (for bandwidth utilisation) */
void gdev_ce_stats(struct gdev_ce *ce, uint64_t *jobs, uint64_t *bytes, uint64_t *busy_ns);
/* jobs (async, and stages of synchronous copies) queued or running */
uint64_t gdev_ce_queued(struct gdev_ce *ce);
/* highest sequence number completed (jobs complete in order) */
uint64_t gdev_ce_completed(struct gdev_ce *ce);
/* wait until job seq completed (timeout_ns < 0: forever); 0 done, -ETIMEDOUT, -EINVAL if
 * seq was never issued.  *job_err = the job's result (0 or -errno) */
int gdev_ce_wait(struct gdev_ce *ce, uint64_t seq, int64_t timeout_ns, int *job_err);
/* result of a completed job: 0, -errno, -EAGAIN if not done, -ENOENT if forgotten */
int gdev_ce_error(struct gdev_ce *ce, uint64_t seq);
/* hold (1) or release (0) the engine: a held engine finishes its current job and starts no
 * other until released (or destroyed); for deterministic tests and suspending a device */
void gdev_ce_hold(struct gdev_ce *ce, int hold);

/* ---------------------------------------------------------------------------------------
 * Device heap: a context's malloc/free allocator (heap.c; the algorithm in heap.h)
 * ------------------------------------------------------------------------------------- */

struct gdev_heap;

/* an allocator over device addresses [base, base + size): size a positive multiple of 16,
 * base a multiple of 4096; its metadata lives in daemon memory */
int gdev_heap_create(uint64_t base, uint64_t size, struct gdev_heap **out);
void gdev_heap_destroy(struct gdev_heap *h);
/* device address of size bytes aligned to align (a power of two <= 4096; 16 at least is
 * given), or 0 (size 0, a bad alignment, or no room): device malloc; thread-safe */
uint64_t gdev_heap_alloc(struct gdev_heap *h, uint64_t size, uint64_t align);
/* device free: 0 (va 0 is a no-op), -EINVAL if no allocation starts at va; thread-safe */
int gdev_heap_free(struct gdev_heap *h, uint64_t va);
/* bytes allocated (whole granules) */
uint64_t gdev_heap_used(struct gdev_heap *h);
