// Device-function calls: function pointers (divergent), struct returns, many mixed args.
struct vec3 { float x, y, z; };
struct big { int a[8]; double d; };

__device__ __noinline__ vec3 cross(vec3 a, vec3 b) {
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
__device__ __noinline__ big make_big(int s) {
    big b;
    for (int k = 0; k < 8; ++k) b.a[k] = s * k;
    b.d = s * 0.5;
    return b;
}
__device__ __noinline__ long long many(int a, long long b, float c, double d, short e,
                                       unsigned char f, const int *p, int g, int h) {
    return a + b + (long long)c + (long long)d + e + f + p[0] + g * h;
}
__device__ __noinline__ int op_add(int a, int b) { return a + b; }
__device__ __noinline__ int op_mul(int a, int b) { return a * b; }
__device__ __noinline__ int op_sub(int a, int b) { return a - b; }
typedef int (*binop)(int, int);

extern "C" __global__ void calls(const int *in, long long *out, float *fout, vec3 v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    vec3 a = {(float)in[i], 1.0f, 2.0f};
    vec3 c = cross(a, v);
    big b = make_big(in[i]);
    binop ops[3] = {op_add, op_mul, op_sub};
    binop f = ops[(unsigned)in[i] % 3];
    out[i * 2] = f(in[i], i) + b.a[in[i] & 7] + (long long)b.d;
    out[i * 2 + 1] = many(in[i], (long long)i << 35, c.x, b.d, (short)i, (unsigned char)i, in, 3, 4);
    fout[i] = c.x + c.y + c.z;
}
