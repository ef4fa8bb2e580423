// Survey corpus: double precision (math library, conversions, bit casts, double atomics).
extern "C" __global__ void double_math(const double *a, const double *b, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double x = a[i], y = b[i], r = 0.0;
    r += exp(x) + log(y) + sin(x) + cos(x) + tan(x) + pow(y, x) + sqrt(y) + rsqrt(y);
    r += fabs(x) + floor(x) + ceil(x) + round(x) + trunc(x) + rint(x) + fmin(x, y) + fmax(x, y);
    r += fmod(x, y) + exp2(x) + log2(y) + log10(y) + atan2(x, y) + tanh(x) + erf(x) + cbrt(x);
    r += asin(x) + acos(x) + atan(x) + sinh(x) + cosh(x) + expm1(x) + log1p(y) + hypot(x, y);
    r += fma(x, y, r) + __dadd_rn(x, y) + __dadd_rz(x, y) + __dmul_ru(x, y) + __dmul_rd(x, y);
    r += __drcp_rn(y) + __dsqrt_rn(y) + __ddiv_rn(x, y) + __fma_rz(x, y, r) + x / y;
    r += __hiloint2double(__double2hiint(x), __double2loint(y));
    r += __longlong_as_double(__double_as_longlong(x) ^ 1);
    r += (double)__double2float_rn(x) + (double)__double2float_rz(y);
    r += (double)__double2int_rn(x) + (double)__double2int_rz(y) + (double)__double2uint_ru(y);
    r += (double)__double2ll_rd(x) + (double)__double2ull_rn(y) + __ll2double_rz((long long)x);
    r += (double)(float)x + (double)(int)y + (double)(unsigned long long)y;
    int e;
    r += frexp(y, &e);
    r += ldexp(x, e) + (isnan(x) ? 1.0 : 0.0) + copysign(x, y);
    out[i] = r;
}

extern "C" __global__ void double_atomics(double *acc, const double *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&acc[i & 7], v[i]);
}
