// LOOP: the paper's long-running compute-bound benchmark (Gdev test/cuda loop, kernel `loop`),
// and IDLE, the one-thread spin kernel.

// For every i < size: data[i] = sum over k < n of (i * k + (k ^ i)) modulo 2^32.
// The loop runs n times per thread, so execution time grows linearly with n.
// Launch: any 1-D geometry covering size threads, e.g. block (256,1,1), grid ceil(size/256).
extern "C" __global__ void loop(unsigned int *data, unsigned int size, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= size)
        return;
    unsigned int acc = 0;
    for (unsigned int k = 0; k < n; k++)
        acc += i * k + (k ^ i);
    data[i] = acc;
}

// One thread spins n times and stores the iteration count: *out = n. Launch (1,1,1)x(1,1,1).
extern "C" __global__ void idle(unsigned int *out, unsigned int n)
{
    volatile unsigned int count = 0;
    for (unsigned int k = 0; k < n; k++)
        count = count + 1;
    *out = count;
}
