// The extern __device__ function and __constant__ variable of main.cu.
__constant__ float factor;

__device__ float scale(float x) { return factor * x + 0.5f; }
