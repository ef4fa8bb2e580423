// A compute-bound kernel for the daemon's tests and scripts/bench/ioctl.py: each thread runs
// `iters` steps of a linear congruential generator and stores the result.
// Regenerate: nvcc -ptx -arch=compute_75 -O3 -o spin.ptx spin.cu

extern "C" __global__ void spin(unsigned int *out, unsigned int iters)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int x = i;
    for (unsigned int k = 0; k < iters; k++)
        x = x * 1664525u + 1013904223u;
    out[i] = x;
}
