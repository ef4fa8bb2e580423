/* Two processes share device memory and an event through CUDA IPC handles sent down a pipe,
 * as the CUDA sample simpleIPC does.  The parent (vGPU 0) allocates and fills a buffer,
 * creates an interprocess event and writes both 64-byte handles into a pipe; the child (its
 * own gdevd context, on vGPU CHILD_DEV) opens them, makes its stream wait for a flag word of
 * the shared buffer (cuStreamWaitValue32), launches a kernel that doubles the parent's first
 * half into the second half, and records the event behind it.  So the event is pending until
 * the parent sets the flag: the parent's cuEventQuery must say NOT_READY, and its stream
 * waits for the event in the daemon (cuStreamWaitEvent) before copying the answer back.  Then the
 * parent frees the buffer first: the child's mapping keeps the memory, a new open fails.
 * Both sides check CUDA's results for the misuses (same process, flags, forged handles,
 * a second context of one process, closing what was not opened).
 * Usage: drv_ipc MADD_PTX CHILD_DEV.  Prints one line per process. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drv_check.h"

#define N 256                     /* the kernel's square: N * N words */
#define HALF (N * N * 4u)
#define FLAG (2 * HALF)           /* the flag word after both halves */
#define SIZE (2 * HALF + 4096)

struct handles {
    CUipcMemHandle mem;
    CUipcEventHandle event;
};

static const char *name_of(CUresult r)
{
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static int io(ssize_t got, size_t want) { return got == (ssize_t)want ? 0 : -1; }

/* Misuses in the child: a forged secret, a non-handle, bad flags, a second context of the
 * process opening what the first holds open. */
static void child_misuses(CUipcMemHandle h, CUdevice dev, CUcontext ctx, char *out, size_t n)
{
    CUipcMemHandle forged = h, junk;
    CUdeviceptr p;
    CUcontext other;
    memset(&junk, 0x5a, sizeof junk);
    forged.reserved[30] ^= 1;
    CUresult f = cuIpcOpenMemHandle(&p, forged, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CUresult j = cuIpcOpenMemHandle(&p, junk, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CUresult fl = cuIpcOpenMemHandle(&p, h, 0x10);
    CUresult second = CUDA_ERROR_UNKNOWN;
    if (cuCtxCreate(&other, NULL, 0, dev) == CUDA_SUCCESS) {
        second = cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        cuCtxDestroy(other);
        cuCtxSetCurrent(ctx);
    }
    snprintf(out, n, "forged=%s junk=%s flags=%s other_context=%s", name_of(f), name_of(j),
             name_of(fl), name_of(second));
}

static int child(int rd, int wr, const char *ptx, int devno)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction add;
    CUstream s;
    CUevent ev;
    CUdeviceptr buf, again;
    struct handles h;
    char byte, misuses[256];
    unsigned n = N, *host = malloc(HALF);

    if (io(read(rd, &h, sizeof h), sizeof h))
        return 1;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, devno));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuModuleLoad(&mod, ptx));
    CK(cuModuleGetFunction(&add, mod, "add"));
    CK(cuIpcOpenMemHandle(&buf, h.mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CK(cuIpcOpenMemHandle(&again, h.mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    EXPECT(again == buf);
    CK(cuIpcCloseMemHandle(again));               /* reference counted: buf stays */
    child_misuses(h.mem, dev, ctx, misuses, sizeof misuses);
    CK(cuIpcOpenEventHandle(&ev, h.event));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamWaitValue32(s, buf + FLAG, 1, CU_STREAM_WAIT_VALUE_EQ));
    CUdeviceptr second = buf + HALF;
    void *params[] = {&buf, &buf, &second, &n};   /* second half = 2 * first half */
    CK(cuLaunchKernel(add, N / 16, N / 16, 1, 16, 16, 1, 0, s, params, NULL));
    CK(cuEventRecord(ev, s));
    if (io(write(wr, "r", 1), 1) || io(read(rd, &byte, 1), 1))  /* the parent freed it */
        return 1;
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH(host, buf, HALF));            /* the memory outlives the free */
    unsigned wrong = 0;
    for (unsigned i = 0; i < N * N; i++)
        wrong += host[i] != i * 3u + 1u;
    CUdeviceptr p;
    CUresult reopen = cuIpcOpenMemHandle(&p, h.mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CK(cuIpcCloseMemHandle(buf));
    CUresult closed_twice = cuIpcCloseMemHandle(buf);
    CK(cuEventDestroy(ev));
    CK(cuStreamDestroy(s));
    CK(cuCtxDestroy(ctx));
    printf("child %s data_after_free_wrong=%u reopen_after_free=%s close_twice=%s\n",
           misuses, wrong, name_of(reopen), name_of(closed_twice));
    free(host);
    return 0;
}

/* Misuses in the parent: its own handle, no allocation, events without the flag. */
static void parent_misuses(struct handles *h, CUdeviceptr buf, char *out, size_t n)
{
    CUdeviceptr p;
    CUevent timed, plain;
    CUipcEventHandle eh;
    CUipcMemHandle mh;
    CUresult own = cuIpcOpenMemHandle(&p, h->mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CUresult own_ev = cuIpcOpenEventHandle(&plain, h->event);
    CUresult not_alloc = cuIpcGetMemHandle(&mh, buf + SIZE + (1u << 20));
    CUresult timed_ev = cuEventCreate(&timed, CU_EVENT_INTERPROCESS);
    CUresult plain_ev = CUDA_ERROR_UNKNOWN;
    if (cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
        plain_ev = cuIpcGetEventHandle(&eh, plain);
        cuEventDestroy(plain);
    }
    CUresult interior = cuIpcGetMemHandle(&mh, buf + 100);
    snprintf(out, n, "own_mem=%s own_event=%s not_alloc=%s timed_interprocess=%s "
             "plain_event=%s interior_same=%d", name_of(own), name_of(own_ev),
             name_of(not_alloc), name_of(timed_ev), name_of(plain_ev),
             interior == CUDA_SUCCESS && !memcmp(&mh, &h->mem, sizeof mh));
}

static int parent(int rd, int wr, pid_t pid)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    CUevent ev;
    CUstream s;
    struct handles h;
    int status;
    char byte, misuses[512];
    unsigned one = 1, *host = malloc(HALF);

    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    CK(cuMemAlloc(&buf, SIZE));
    for (unsigned i = 0; i < N * N; i++)
        host[i] = i * 3u + 1u;
    CK(cuMemsetD8(buf, 0, SIZE));
    CK(cuMemcpyHtoD(buf, host, HALF));
    CK(cuIpcGetMemHandle(&h.mem, buf));
    CK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CK(cuIpcGetEventHandle(&h.event, ev));
    parent_misuses(&h, buf, misuses, sizeof misuses);
    if (io(write(wr, &h, sizeof h), sizeof h) || io(read(rd, &byte, 1), 1))
        return 1;
    CUresult pending = cuEventQuery(ev);          /* the child's kernel waits for the flag */
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamWaitEvent(s, ev, 0));              /* ordered in the daemon, no host wait */
    CK(cuMemcpyHtoD(buf + FLAG, &one, 4));        /* release the child's stream */
    CK(cuMemcpyDtoHAsync(host, buf + HALF, HALF, s));   /* after the child's kernel */
    CK(cuStreamSynchronize(s));
    CK(cuEventSynchronize(ev));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N * N; i++)
        wrong += host[i] != 2 * (i * 3u + 1u);
    CK(cuMemFree(buf));                           /* first: the child still holds it */
    if (io(write(wr, "f", 1), 1) || waitpid(pid, &status, 0) != pid)
        return 1;
    CK(cuEventDestroy(ev));
    CK(cuStreamDestroy(s));
    CK(cuCtxDestroy(ctx));
    printf("parent %s pending=%s answer_wrong=%u child_exit=%d\n", misuses, name_of(pending),
           wrong, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(host);
    return 0;
}

int main(int argc, char **argv)
{
    int down[2], up[2];
    if (argc < 3 || pipe(down) || pipe(up))
        return 2;
    fflush(stdout);
    pid_t pid = fork();                           /* before any CUDA call, as the sample */
    if (pid < 0)
        return 2;
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        int rc = child(down[0], up[1], argv[1], atoi(argv[2]));
        fflush(stdout);
        _exit(rc);
    }
    close(down[0]);
    close(up[1]);
    return parent(up[0], down[1], pid);
}
