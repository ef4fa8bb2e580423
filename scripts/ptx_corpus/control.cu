// Survey corpus: control flow and calls: switch tables, __noinline__ functions with struct
// arguments and returns, local arrays, function pointers, goto, unrolled loops, templates with
// mangled names, C++ classes.
struct vec3 { float x, y, z; };
struct big { int a[12]; double d; };

__device__ __noinline__ struct vec3 cross(struct vec3 a, struct vec3 b)
{
    struct vec3 c = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return c;
}

__device__ __noinline__ struct big make_big(int seed)
{
    struct big r;
    for (int k = 0; k < 12; k++)
        r.a[k] = seed * k;
    r.d = seed * 0.5;
    return r;
}

__device__ __noinline__ int many_args(int a, long long b, float c, double d, short e,
                                      unsigned char f, const int *p, int g, int h)
{
    return a + (int)b + (int)c + (int)d + e + f + p[0] + g * h;
}

__device__ int op_add(int a, int b) { return a + b; }
__device__ int op_mul(int a, int b) { return a * b; }
__device__ int op_sub(int a, int b) { return a - b; }
typedef int (*binop)(int, int);

extern "C" __global__ void calls(const int *in, int *out, float *fout, const struct big *bigs,
                                 struct vec3 v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    struct vec3 a = {(float)in[i], 1.0f, 2.0f};
    struct vec3 c = cross(a, v);
    struct big b = make_big(in[i]);
    struct big bb = bigs[i & 3];
    binop ops[3] = {op_add, op_mul, op_sub};
    binop f = ops[in[i] % 3 < 0 ? 0 : in[i] % 3];
    out[i] = f(in[i], i) + b.a[in[i] & 7] + bb.a[i % 12] + (int)bb.d +
             many_args(in[i], (long long)i << 35, c.x, b.d, (short)i, (unsigned char)i, in, 3, 4);
    fout[i] = c.x + c.y + c.z;
}

extern "C" __global__ void switches(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = in[i], r;
    switch (x) {
    case 0: r = 11; break;
    case 1: r = x * 13; break;
    case 2: r = x ^ 0x55; break;
    case 3: r = -x; break;
    case 4: r = x << 3; break;
    case 5: r = x + in[0]; break;
    case 6: r = 99; break;
    case 7: r = x - 700; break;
    case 100: r = 1; break;
    case 1000: r = 2; break;
    default: r = 0;
    }
    int local[64];
    for (int k = 0; k < 64; k++)
        local[k] = k * x;
    int idx = (x & 63);
retry:
    r += local[idx];
    if (r < 0 && idx > 0) {
        idx >>= 1;
        goto retry;
    }
#pragma unroll 4
    for (int k = 0; k < n && k < 37; k++)
        r += in[k] & x;
    out[i] = r;
}

template <typename T, int N>
class Accumulator {
  public:
    __device__ Accumulator() : sum_(0) {}
    __device__ void add(T v) { sum_ += v * (T)N; }
    __device__ T get() const { return sum_; }
  private:
    T sum_;
};

template <typename T, int N>
__global__ void templated(const T *in, T *out, int n)
{
    Accumulator<T, N> acc;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        acc.add(in[i]);
    auto twice = [](T v) { return v + v; };
    out[blockIdx.x * blockDim.x + threadIdx.x] = twice(acc.get());
}

template __global__ void templated<float, 3>(const float *, float *, int);
template __global__ void templated<double, 5>(const double *, double *, int);
template __global__ void templated<long long, 7>(const long long *, long long *, int);
