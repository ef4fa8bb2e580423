/* CUresult: the one errno translation of libcuda (docs/cuda.md), names and strings. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

static _Thread_local char reason[512];

CUresult cu_error(int neg_errno)
{
    switch (-neg_errno) {
    case 0: return CUDA_SUCCESS;
    case ENOMEM: return CUDA_ERROR_OUT_OF_MEMORY;
    case EINVAL: case ERANGE: case ENOENT: return CUDA_ERROR_INVALID_VALUE;
    case EBADF: return CUDA_ERROR_INVALID_CONTEXT;
    case ENODEV: return CUDA_ERROR_INVALID_DEVICE;
    case EFAULT: return CUDA_ERROR_ILLEGAL_ADDRESS;
    case EIO: return CUDA_ERROR_LAUNCH_FAILED;
    case ENOTRECOVERABLE: return CUDA_ERROR_ASSERT;   /* a device assert failed */
    case ETIME: return CUDA_ERROR_LAUNCH_TIMEOUT;
    case EOVERFLOW: return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE; /* more than fit at once */
    case EBUSY: return CUDA_ERROR_DEVICE_UNAVAILABLE;
    case EPERM: case EACCES: return CUDA_ERROR_NOT_PERMITTED;
    case EPIPE: case ECONNRESET: case ECONNREFUSED: return CUDA_ERROR_OPERATING_SYSTEM;
    default: return CUDA_ERROR_UNKNOWN;
    }
}

int cu_kernel_fault(CUresult r)
{
    /* what poisons a context in CUDA: every later call of it fails with the same result
     * (the daemon's KernelFault: illegal address, trap, assert, watchdog) */
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
           r == CUDA_ERROR_ASSERT || r == CUDA_ERROR_LAUNCH_TIMEOUT;
}

CUresult cu_poison(CUcontext c, CUresult r)
{
    if (!cu_kernel_fault(r) || c->sticky)
        return r;
    c->sticky = r;
    /* the program prints CUDA's fixed text only: say what the daemon found (the failing
     * thread's assertion, as CUDA's driver does at the sync; or which kernel faulted, where
     * and on which PTX line), once for the context it poisons, without the verb before it
     * and the errno's words after */
    const char *m = gdev_last_error(), *from = strstr(m, ": "), *to = strrchr(m, ':');
    int len = from && to > from ? (int)(to - from - 2) : (int)strlen(m);
    const char *text = from && to > from ? from + 2 : m;
    if (r == CUDA_ERROR_ASSERT) {
        fprintf(stderr, "%.*s\n", len, text);
    } else {
        int said = 0;
        cu_notice(&said, "%.*s", len, text);
    }
    return r;
}

CUresult cu_fail(CUresult r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return r;
}

void cu_notice(int *said, const char *fmt, ...)
{
    /* an unmodified program prints only cuGetErrorString's fixed text, or nothing: a
     * failure it cannot act on without our words is said once per site on stderr */
    const char *quiet = getenv("GDEV_QUIET");
    if ((*said)++ || (quiet && *quiet && strcmp(quiet, "0")))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("gdev: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The reason of the calling thread's last failure (a gdev-py addition; also printed by
 * programs through cuGetErrorString's companion gdevCudaLastError). */
API const char *gdevCudaLastError(void)
{
    return reason[0] ? reason : gdev_last_error();
}

#define ERRORS(X) \
    X(CUDA_SUCCESS, "no error") \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument") \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory") \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error") \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down") \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected") \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal") \
    X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid") \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context") \
    X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current") \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device (build with PTX: -gencode arch=compute_XX,code=compute_XX)") \
    X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed") \
    X(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid") \
    X(CUDA_ERROR_FILE_NOT_FOUND, "file not found") \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle") \
    X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped") \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found") \
    X(CUDA_ERROR_NOT_READY, "device not ready") \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered") \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch") \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated") \
    X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure") \
    X(CUDA_ERROR_ASSERT, "device-side assert triggered") \
    X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch") \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed") \
    X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted") \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported") \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable") \
    X(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS") \
    X(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture") \
    X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices") \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled") \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled") \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped") \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region") \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
#define NAME(e, s) case e: *pStr = #e; return CUDA_SUCCESS;
    switch ((int)error) {
    ERRORS(NAME)
    }
#undef NAME
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
#define STR(e, s) case e: *pStr = s; return CUDA_SUCCESS;
    switch ((int)error) {
    ERRORS(STR)
    }
#undef STR
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
