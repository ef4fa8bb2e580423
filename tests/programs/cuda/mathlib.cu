// The CUDA math library as scientific codes call it, float and double: each thread
// evaluates a row of functions (trigonometric with large arguments, exponentials,
// logarithms, powers, special functions, rounding and decomposition).

extern "C" __global__ void math_f32(const float *x, const float *y, float *out, int *iout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = x[i], b = y[i];
    float *o = out + 24 * i;
    float s, c;
    sincosf(a, &s, &c);
    o[0] = s;
    o[1] = c;
    o[2] = tanf(a);
    o[3] = expf(b);
    o[4] = exp2f(b);
    o[5] = exp10f(b * 0.25f);
    o[6] = expm1f(b * 0.01f);
    o[7] = logf(fabsf(a));
    o[8] = log2f(fabsf(a));
    o[9] = log10f(fabsf(a));
    o[10] = log1pf(fabsf(b));
    o[11] = powf(fabsf(a), b * 0.1f);
    o[12] = atan2f(a, b);
    o[13] = asinf(b / 40.0f);
    o[14] = acosf(b / 40.0f);
    o[15] = sinhf(b * 0.1f) + coshf(b * 0.1f) + tanhf(b * 0.1f);
    o[16] = erff(b * 0.1f) + erfcf(b * 0.1f);
    o[17] = cbrtf(a) + rsqrtf(fabsf(a)) + hypotf(a, b);
    o[18] = fmodf(a, b) + remainderf(a, b);
    o[19] = lgammaf(fabsf(b) + 0.5f);
    o[20] = tgammaf(fabsf(b) * 0.1f + 0.5f);
    int e;
    float m = frexpf(a, &e);
    o[21] = m + ldexpf(b, e % 7);
    o[22] = erfinvf(b / 41.0f) + normcdfinvf(fabsf(b) / 41.0f + 0.001f);
    o[23] = sinpif(b * 0.37f) + cospif(a * 0.01f);
    iout[2 * i] = e + lrintf(b) + (int)roundf(a) + ilogbf(a);
    iout[2 * i + 1] = __float_as_int(truncf(a) + floorf(b) + ceilf(a) + nearbyintf(b) +
                                     copysignf(fdimf(a, b), b) + fmaxf(a, b) + fminf(a, b));
}

extern "C" __global__ void math_f64(const double *x, const double *y, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double a = x[i], b = y[i];
    double *o = out + 16 * i;
    double s, c;
    sincos(a, &s, &c);
    o[0] = s;
    o[1] = c;
    o[2] = tan(a);
    o[3] = exp(b);
    o[4] = log(fabs(a));
    o[5] = log1p(fabs(b));
    o[6] = pow(fabs(a), b * 0.1);
    o[7] = atan2(a, b);
    o[8] = sqrt(fabs(a)) + rsqrt(fabs(b) + 1.0) + cbrt(a);
    o[9] = erf(b * 0.1) + erfc(b * 0.1);
    o[10] = sinh(b * 0.1) + cosh(b * 0.1) + tanh(b * 0.1);
    o[11] = asin(b / 40.0) + acos(b / 40.0) + atan(a);
    o[12] = lgamma(fabs(b) + 0.5);
    o[13] = fmod(a, b) + hypot(a, b);
    o[14] = exp2(b * 0.5) + log2(fabs(a)) + log10(fabs(a)) + expm1(b * 0.01);
    o[15] = a / b + 1.0 / a;
}
