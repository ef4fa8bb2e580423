// Device assert (tests/ptx/test_assert.py): nvcc -arch=sm_75 -ptx assert.cu
#include <cassert>

extern "C" __global__ void bounded(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        assert(in[i] < 100);
        out[i] = in[i] * 2;
    }
}

extern "C" __global__ void grid2d(const int *in, int *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    int i = y * gridDim.x * blockDim.x + x;
    assert(in[i] != 7);
    out[i] = in[i];
}
