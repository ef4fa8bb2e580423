// Rodinia NW: Needleman-Wunsch global sequence alignment score matrix, processed in 16x16
// tiles along anti-diagonals. Port of Rodinia 3.1 nw/needle_kernel.cu.
// cols = len + 1 with len a multiple of 16; matrix_cuda row 0 / column 0 hold -k*penalty,
// referrence[i][j] the substitution score (row 0 / column 0 unused). block_width = len/16.
// Launch: block (16,1,1); for i = 1..block_width: needle_cuda_shared_1 grid (i,1,1);
// then for i = block_width-1..1: needle_cuda_shared_2 grid (i,1,1).

#define BLOCK_SIZE 16

__device__ __host__ int maximum(int a, int b, int c)
{
    int k;
    if (a <= b)
        k = b;
    else
        k = a;
    if (k <= c)
        return (c);
    else
        return (k);
}

// Fill one tile of the score matrix from its north, west and north-west borders.
__device__ void needle_tile(int *referrence, int *matrix_cuda, int cols, int penalty,
                            int b_index_x, int b_index_y)
{
    int tx = threadIdx.x;
    int index = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + (cols + 1);
    int index_n = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + (1);
    int index_w = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + (cols);
    int index_nw = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x;

    __shared__ int temp[BLOCK_SIZE + 1][BLOCK_SIZE + 1];
    __shared__ int ref[BLOCK_SIZE][BLOCK_SIZE];

    if (tx == 0)
        temp[tx][0] = matrix_cuda[index_nw];

    for (int ty = 0; ty < BLOCK_SIZE; ty++)
        ref[ty][tx] = referrence[index + cols * ty];
    __syncthreads();

    temp[tx + 1][0] = matrix_cuda[index_w + cols * tx];
    __syncthreads();

    temp[0][tx + 1] = matrix_cuda[index_n];
    __syncthreads();

    for (int m = 0; m < BLOCK_SIZE; m++) {
        if (tx <= m) {
            int t_index_x = tx + 1;
            int t_index_y = m - tx + 1;
            temp[t_index_y][t_index_x] =
                maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                        temp[t_index_y][t_index_x - 1] - penalty,
                        temp[t_index_y - 1][t_index_x] - penalty);
        }
        __syncthreads();
    }

    for (int m = BLOCK_SIZE - 2; m >= 0; m--) {
        if (tx <= m) {
            int t_index_x = tx + BLOCK_SIZE - m;
            int t_index_y = BLOCK_SIZE - tx;
            temp[t_index_y][t_index_x] =
                maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                        temp[t_index_y][t_index_x - 1] - penalty,
                        temp[t_index_y - 1][t_index_x] - penalty);
        }
        __syncthreads();
    }

    for (int ty = 0; ty < BLOCK_SIZE; ty++)
        matrix_cuda[index + ty * cols] = temp[ty + 1][tx + 1];
}

// Upper-left half: anti-diagonal i of tiles (block bx takes tile (bx, i-1-bx)).
extern "C" __global__ void needle_cuda_shared_1(int *referrence, int *matrix_cuda, int cols,
                                                int penalty, int i, int block_width)
{
    int bx = blockIdx.x;
    needle_tile(referrence, matrix_cuda, cols, penalty, bx, i - 1 - bx);
}

// Lower-right half: block bx takes tile (bx + block_width - i, block_width - 1 - bx).
extern "C" __global__ void needle_cuda_shared_2(int *referrence, int *matrix_cuda, int cols,
                                                int penalty, int i, int block_width)
{
    int bx = blockIdx.x;
    needle_tile(referrence, matrix_cuda, cols, penalty, bx + block_width - i,
                block_width - bx - 1);
}
