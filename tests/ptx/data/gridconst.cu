// __grid_constant__ parameters: the kernel takes the address of its parameter (cvta.param).
struct S { int a[8]; };
__device__ __noinline__ int sum(const S *s, int n) { int t = 0; for (int i = 0; i < n; ++i) t += s->a[i]; return t; }
extern "C" __global__ void k(const __grid_constant__ S s, int *out, int n) { out[threadIdx.x] = sum(&s, n) + s.a[threadIdx.x & 7]; }
extern "C" __global__ void k2(S s, int *out, int n) { out[threadIdx.x] = sum(&s, n) + s.a[threadIdx.x & 7]; }
