// Survey corpus: single-precision math library and intrinsics, conversions with every rounding.
extern "C" __global__ void float_math(const float *a, const float *b, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i], y = b[i], r = 0.0f;
    r += expf(x) + logf(y) + sinf(x) + cosf(x) + tanf(x) + powf(y, x) + sqrtf(y) + rsqrtf(y);
    r += fabsf(x) + floorf(x) + ceilf(x) + roundf(x) + truncf(x) + rintf(x) + nearbyintf(y);
    r += fminf(x, y) + fmaxf(x, y) + fmodf(x, y) + remainderf(x, y) + exp2f(x) + log2f(y);
    r += log10f(y) + atan2f(x, y) + tanhf(x) + erff(x) + erfcf(x) + asinf(x) + acosf(x);
    r += atanf(x) + sinhf(x) + coshf(x) + expm1f(x) + log1pf(y) + cbrtf(x) + hypotf(x, y);
    r += lgammaf(y) + tgammaf(y) + exp10f(x) + sinpif(x) + cospif(x) + normf(2, &x);
    float s, c;
    sincosf(x, &s, &c);
    r += s * c;
    r += __expf(x) + __logf(y) + __sinf(x) + __cosf(x) + __tanf(x) + __powf(y, x);
    r += __fdividef(x, y) + __saturatef(x) + __exp10f(x) + __log2f(y) + __log10f(y);
    r += fmaf(x, y, r) + __fmul_rn(x, y) + __fmul_rz(x, y) + __fadd_rz(x, y) + __fadd_ru(x, y);
    r += __fadd_rd(x, y) + __fsub_rn(x, y) + __fdiv_rn(x, y) + __fdiv_rz(x, y);
    r += __frcp_rn(y) + __frcp_rz(y) + __fsqrt_rn(y) + __fsqrt_rd(y) + __frsqrt_rn(y);
    r += __fmaf_rn(x, y, r) + __fmaf_rz(x, y, r) + __fmaf_ru(x, y, r);
    r += copysignf(x, y) + fdimf(x, y) + ldexpf(x, 3);
    int e;
    r += frexpf(y, &e);
    r += (float)e + ilogbf(y) + logbf(y) + scalbnf(x, 2);
    r += isnan(x) ? 1.0f : 0.0f;
    r += isinf(y) ? 2.0f : 0.0f;
    r += isfinite(x) ? 3.0f : 0.0f;
    r += signbit(y) ? 4.0f : 0.0f;
    r += x / y;
    out[i] = r;
}

extern "C" __global__ void float_conversions(const float *a, int *oi, unsigned int *ou,
                                             long long *ol, unsigned long long *oul,
                                             float *of, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i];
    oi[4 * i + 0] = __float2int_rn(x);
    oi[4 * i + 1] = __float2int_rz(x);
    oi[4 * i + 2] = __float2int_ru(x);
    oi[4 * i + 3] = __float2int_rd(x) + (int)x + __float_as_int(x);
    ou[2 * i + 0] = __float2uint_rn(x) + (unsigned int)x;
    ou[2 * i + 1] = __float2uint_rz(x) + __float_as_uint(x);
    ol[i] = __float2ll_rn(x) + (long long)x + __float2ll_rd(x);
    oul[i] = __float2ull_rz(x) + (unsigned long long)x;
    of[6 * i + 0] = (float)oi[i] + __int2float_rz(oi[i]) + __uint2float_rn(ou[i]);
    of[6 * i + 1] = (float)ol[i] + __ll2float_rd(ol[i]) + (float)oul[i] + __ull2float_ru(oul[i]);
    of[6 * i + 2] = __int_as_float(oi[i]) + __uint_as_float(ou[i]);
    of[6 * i + 3] = (float)(short)oi[i] + (float)(unsigned char)ou[i];
    of[6 * i + 4] = (float)(double)x * 3.0;
    of[6 * i + 5] = x > 0.5f ? x : -x;
}
