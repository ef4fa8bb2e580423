// Rodinia SRAD v1 (the paper's SRAD; srad.cu is v2, the paper's SRAD2): the same diffusion as
// v2 on a column-major image, one thread per pixel, neighbours through index arrays, plus the
// exp/log image transforms and a multi-pass shared-memory reduction for the ROI statistics.
// After Rodinia 3.1 srad/srad_v1 (extract, prepare, reduce, srad, srad2, compress).
// Launch: block (NUMBER_THREADS,1,1), grid ceil(Ne / NUMBER_THREADS), Ne = Nr * Nc.
// Per iteration: prepare; reduce passes (see `reduce`); host derives q0sqr; srad; srad2.

#define NUMBER_THREADS 512

typedef float fp;

// d_I[e] = exp(d_I[e] / 255): the image from the log-compressed domain.
extern "C" __global__ void extract(long d_Ne, fp *d_I)
{
    int ei = blockIdx.x * NUMBER_THREADS + threadIdx.x;
    if (ei < d_Ne)
        d_I[ei] = exp(d_I[ei] / 255);
}

// d_sums[e] = d_I[e], d_sums2[e] = d_I[e]^2: the inputs of the reduction.
extern "C" __global__ void prepare(long d_Ne, fp *d_I, fp *d_sums, fp *d_sums2)
{
    int ei = blockIdx.x * NUMBER_THREADS + threadIdx.x;
    if (ei < d_Ne) {
        d_sums[ei] = d_I[ei];
        d_sums2[ei] = d_I[ei] * d_I[ei];
    }
}

// One pass of the sum reduction, in place: the d_no partial sums sit at d_sums[k * d_mul];
// block bx adds those with k in [bx * NUMBER_THREADS, (bx + 1) * NUMBER_THREADS) and stores
// the result at d_sums[bx * NUMBER_THREADS * d_mul] (likewise d_sums2). Host loop: no = Ne,
// mul = 1, blocks = ceil(no / 512); repeat { reduce; if blocks == 1 stop; no = blocks;
// mul *= 512; blocks = ceil(no / 512) }; the totals end in d_sums[0] and d_sums2[0].
extern "C" __global__ void reduce(long d_Ne, int d_no, int d_mul, fp *d_sums, fp *d_sums2)
{
    __shared__ fp d_psum[NUMBER_THREADS];
    __shared__ fp d_psum2[NUMBER_THREADS];
    int bx = blockIdx.x;
    int tx = threadIdx.x;
    int ei = bx * NUMBER_THREADS + tx;

    if (ei < d_no) {
        d_psum[tx] = d_sums[(long)ei * d_mul];
        d_psum2[tx] = d_sums2[(long)ei * d_mul];
    } else {
        d_psum[tx] = 0;
        d_psum2[tx] = 0;
    }
    __syncthreads();

    for (int i = 2; i <= NUMBER_THREADS; i = 2 * i) {
        if ((tx + 1) % i == 0) {
            d_psum[tx] = d_psum[tx] + d_psum[tx - i / 2];
            d_psum2[tx] = d_psum2[tx] + d_psum2[tx - i / 2];
        }
        __syncthreads();
    }

    if (tx == NUMBER_THREADS - 1) {
        d_sums[(long)bx * d_mul * NUMBER_THREADS] = d_psum[tx];
        d_sums2[(long)bx * d_mul * NUMBER_THREADS] = d_psum2[tx];
    }
}

// Column-major pixel e -> (row, col).
__device__ void pixel(int ei, int d_Nr, int *row, int *col)
{
    *row = (ei + 1) % d_Nr - 1;
    *col = (ei + 1) / d_Nr + 1 - 1;
    if ((ei + 1) % d_Nr == 0) {
        *row = d_Nr - 1;
        *col = *col - 1;
    }
}

// Derivatives through the clamped neighbour indices iN/iS (rows) and jW/jE (columns), and the
// saturated diffusion coefficient (equations 33-35).
extern "C" __global__ void srad(fp d_lambda, int d_Nr, int d_Nc, long d_Ne, int *d_iN,
                                int *d_iS, int *d_jE, int *d_jW, fp *d_dN, fp *d_dS,
                                fp *d_dE, fp *d_dW, fp d_q0sqr, fp *d_c, fp *d_I)
{
    int ei = blockIdx.x * NUMBER_THREADS + threadIdx.x;
    int row, col;
    pixel(ei, d_Nr, &row, &col);
    if (ei < d_Ne) {
        fp d_Jc = d_I[ei];
        fp d_dN_loc = d_I[d_iN[row] + d_Nr * col] - d_Jc;
        fp d_dS_loc = d_I[d_iS[row] + d_Nr * col] - d_Jc;
        fp d_dW_loc = d_I[row + d_Nr * d_jW[col]] - d_Jc;
        fp d_dE_loc = d_I[row + d_Nr * d_jE[col]] - d_Jc;

        fp d_G2 = (d_dN_loc * d_dN_loc + d_dS_loc * d_dS_loc + d_dW_loc * d_dW_loc +
                   d_dE_loc * d_dE_loc) / (d_Jc * d_Jc);
        fp d_L = (d_dN_loc + d_dS_loc + d_dW_loc + d_dE_loc) / d_Jc;

        fp d_num = (0.5 * d_G2) - ((1.0 / 16.0) * (d_L * d_L));
        fp d_den = 1 + (0.25 * d_L);
        fp d_qsqr = d_num / (d_den * d_den);

        d_den = (d_qsqr - d_q0sqr) / (d_q0sqr * (1 + d_q0sqr));
        fp d_c_loc = 1.0 / (1.0 + d_den);
        if (d_c_loc < 0)
            d_c_loc = 0;
        else if (d_c_loc > 1)
            d_c_loc = 1;

        d_dN[ei] = d_dN_loc;
        d_dS[ei] = d_dS_loc;
        d_dW[ei] = d_dW_loc;
        d_dE[ei] = d_dE_loc;
        d_c[ei] = d_c_loc;
    }
}

// Divergence and image update (equations 58 and 61).
extern "C" __global__ void srad2(fp d_lambda, int d_Nr, int d_Nc, long d_Ne, int *d_iN,
                                 int *d_iS, int *d_jE, int *d_jW, fp *d_dN, fp *d_dS,
                                 fp *d_dE, fp *d_dW, fp *d_c, fp *d_I)
{
    int ei = blockIdx.x * NUMBER_THREADS + threadIdx.x;
    int row, col;
    pixel(ei, d_Nr, &row, &col);
    if (ei < d_Ne) {
        fp d_cN = d_c[ei];
        fp d_cS = d_c[d_iS[row] + d_Nr * col];
        fp d_cW = d_c[ei];
        fp d_cE = d_c[row + d_Nr * d_jE[col]];
        fp d_D = d_cN * d_dN[ei] + d_cS * d_dS[ei] + d_cW * d_dW[ei] + d_cE * d_dE[ei];
        d_I[ei] = d_I[ei] + 0.25 * d_lambda * d_D;
    }
}

// d_I[e] = log(d_I[e]) * 255: back to the log-compressed domain.
extern "C" __global__ void compress(long d_Ne, fp *d_I)
{
    int ei = blockIdx.x * NUMBER_THREADS + threadIdx.x;
    if (ei < d_Ne)
        d_I[ei] = log(d_I[ei]) * 255;
}
