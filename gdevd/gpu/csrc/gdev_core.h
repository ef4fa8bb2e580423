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
