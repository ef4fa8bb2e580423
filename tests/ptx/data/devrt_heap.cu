// Dynamic parallelism with the device heap (gdevd/gpu/ptx/devrt.py): device-side
// cudaMalloc/cudaFree.  Apart from devrt.cu because a module whose kernels launch kernels
// gets the context's device heap for every such kernel once any of them calls malloc
// (a child may), and the hostile tests run devrt.cu's launches in a share too small for
// a heap.
// device-side cudaMalloc/cudaFree (the device heap): thread t allocates t + 1 ints, fills
// them, a child sums them; results[t] = the child's sum; errs: a free of a non-heap
// address, an impossible size
extern "C" __global__ void sum_block(const int *p, int n, int *out)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += p[i];
    *out = s;
}

extern "C" __global__ void heap_user(int *results, int *errs)
{
    int t = threadIdx.x, *p = nullptr;
    errs[t] = cudaMalloc((void **)&p, (t + 1) * sizeof(int));
    if (errs[t])
        return;
    for (int i = 0; i <= t; i++)
        p[i] = i + 1;
    sum_block<<<1, 1>>>(p, t + 1, results + t);
    if (t == 0) {
        errs[32] = cudaFree(results);
        void *huge;
        errs[33] = cudaMalloc(&huge, (size_t)1 << 40);
    }
}
