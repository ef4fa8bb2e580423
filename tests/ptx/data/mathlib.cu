// CUDA math library functions: nvcc inlines long instruction sequences for each.
#define NF 14
extern "C" __global__ void fmath(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    float *o = out + i * NF;
    o[0] = expf(x); o[1] = logf(y); o[2] = sinf(x); o[3] = cosf(x); o[4] = tanf(x);
    o[5] = powf(y, x); o[6] = atan2f(x, y); o[7] = tanhf(x); o[8] = erff(x);
    o[9] = fmodf(x, y); o[10] = lgammaf(y); o[11] = cbrtf(x); o[12] = __expf(x);
    o[13] = hypotf(x, y);
}
#define ND 8
extern "C" __global__ void dmath(const double *a, const double *b, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    double *o = out + i * ND;
    o[0] = exp(x); o[1] = log(y); o[2] = sin(x); o[3] = cos(x); o[4] = pow(y, x);
    o[5] = atan2(x, y); o[6] = sqrt(y) / (x + 10.0); o[7] = fmod(x, y);
}
