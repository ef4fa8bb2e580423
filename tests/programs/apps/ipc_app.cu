// simpleIPC's shape: the parent process forks its children before any CUDA call, allocates
// one buffer on device 0 and an interprocess event per child, and sends each child the
// 64-byte memory and event handles through a pipe.  Each child opens them on a device of
// its own (child i on device (i + 1) % count), fills its slice of the parent's buffer with a
// kernel, records its event and tells the parent at once; the parent synchronizes on each
// child's event (not on the child) before reading the slice back, so only the event orders
// the child's kernel before the parent's copy.  The parent also checks that its own handle
// cannot be opened in its own process.  Prints "ipc_app ok children=K" when every value
// is right.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define K 3
#define N 4096

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,             \
                    cudaGetErrorName(e_));                                           \
            return 1;                                                                \
        }                                                                            \
    } while (0)

struct handles {
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t event;
};

__host__ __device__ int mix(int v)
{
    for (int k = 0; k < 256; k++)  // some work, so the event is likely pending at first
        v = (v * 31 + k) % 1000003;
    return v;
}

__global__ void fill(int *slice, int n, int child)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        slice[i] = mix(child * 1000 + i);
}

static int child(int i, int rd, int wr)
{
    struct handles h;
    int count, *buf;
    cudaEvent_t ev;
    char byte;
    if (read(rd, &h, sizeof h) != (ssize_t)sizeof h)
        return 1;
    CK(cudaGetDeviceCount(&count));
    CK(cudaSetDevice((i + 1) % count));
    CK(cudaIpcOpenMemHandle((void **)&buf, h.mem, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaIpcOpenEventHandle(&ev, h.event));
    fill<<<(N + 255) / 256, 256>>>(buf + i * N, N, i + 1);
    CK(cudaGetLastError());
    CK(cudaEventRecord(ev, 0));
    if (write(wr, "r", 1) != 1 || read(rd, &byte, 1) != 1)  // the parent has checked
        return 1;
    CK(cudaIpcCloseMemHandle(buf));
    CK(cudaEventDestroy(ev));
    return 0;
}

static int parent(int rd[K], int wr[K], pid_t pid[K])
{
    struct handles h[K];
    cudaEvent_t ev[K];
    int *buf, *host = (int *)malloc(N * sizeof(int)), wrong = 0, status, failed = 0;
    void *own;
    char byte;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&buf, K * N * sizeof(int)));
    CK(cudaMemset(buf, 0, K * N * sizeof(int)));
    for (int i = 0; i < K; i++) {
        CK(cudaIpcGetMemHandle(&h[i].mem, buf));
        CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming | cudaEventInterprocess));
        CK(cudaIpcGetEventHandle(&h[i].event, ev[i]));
        if (write(wr[i], &h[i], sizeof h[i]) != (ssize_t)sizeof h[i])
            return 1;
    }
    cudaError_t self = cudaIpcOpenMemHandle(&own, h[0].mem, cudaIpcMemLazyEnablePeerAccess);
    cudaGetLastError();
    for (int i = 0; i < K; i++) {
        if (read(rd[i], &byte, 1) != 1)
            return 1;
        CK(cudaEventSynchronize(ev[i]));    // the child's record, seen here
        CK(cudaMemcpy(host, buf + i * N, N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int j = 0; j < N; j++)
            wrong += host[j] != mix((i + 1) * 1000 + j);
    }
    for (int i = 0; i < K; i++) {
        if (write(wr[i], "x", 1) != 1 || waitpid(pid[i], &status, 0) != pid[i])
            return 1;
        failed += !WIFEXITED(status) || WEXITSTATUS(status);
        CK(cudaEventDestroy(ev[i]));
    }
    CK(cudaFree(buf));
    printf("own handle in own process: %s\n", cudaGetErrorName(self));
    if (wrong || failed) {
        printf("ipc_app FAILED wrong=%d failed_children=%d\n", wrong, failed);
        return 1;
    }
    printf("ipc_app ok children=%d\n", K);
    free(host);
    return 0;
}

int main()
{
    int down[K][2], up[K][2], rd[K], wr[K];
    pid_t pid[K];
    fflush(stdout);
    for (int i = 0; i < K; i++) {
        if (pipe(down[i]) || pipe(up[i]))
            return 2;
        if ((pid[i] = fork()) == 0) {      // before any CUDA call, as simpleIPC
            int rc = child(i, down[i][0], up[i][1]);
            fflush(stdout);
            _exit(rc);
        }
        rd[i] = up[i][0];
        wr[i] = down[i][1];
    }
    return parent(rd, wr, pid);
}
