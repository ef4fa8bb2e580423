// Spin locks: progress needs a scheduler that eventually runs the lock holder.
extern "C" __global__ void block_lock(int *lock, int *counter) {
    if (threadIdx.x == 0) {
        while (atomicCAS(lock, 0, 1) != 0) { }
        __threadfence();
        int v = *(volatile int *)counter;
        *(volatile int *)counter = v + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}

extern "C" __global__ void flag_wait(volatile int *flag, int *out) {
    // block 0 sets the flag late; every other block waits for it
    if (blockIdx.x == 0) {
        int s = 0;
        for (int k = 0; k < 200; ++k) s += k * threadIdx.x;
        if (threadIdx.x == 0) { out[0] = s; __threadfence(); *flag = 1; }
    } else if (threadIdx.x == 0) {
        while (*flag == 0) { }
        out[blockIdx.x] = 1;
    }
}

extern "C" __global__ void flag_after_barrier(volatile int *flag, int *out) {
    // block 1 waits at a barrier before setting the flag that block 0 spins on
    __shared__ int s[64];
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) { while (*flag == 0) { } out[0] = 1; }
    } else {
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        if (threadIdx.x == 0) { out[1] = s[63]; __threadfence(); *flag = 1; }
    }
}
