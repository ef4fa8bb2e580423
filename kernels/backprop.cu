// Rodinia BACKPROP (the paper's BP): one hidden layer of 16 units, forward pass and weight
// adjustment. Port of Rodinia 3.1 backprop/backprop_cuda_kernel.cu, including its fast
// intrinsics (__log2f, __powf). Weights are (in+1) x (hid+1) row-major, row 0 and column 0
// are the bias entries. Requires hid == 16 and in a multiple of 16.
// Launch both: block (16,16,1), grid (1, in/16, 1).

#define WIDTH 16     // shared memory width
#define HEIGHT 16    // shared memory height
#define ETA 0.3      // learning rate
#define MOMENTUM 0.3 // momentum

// hidden_partial_sum[by*hid + j] = sum over the block's 16 input rows r of
// input[r] * w[r][j+1]; input_hidden_cuda is left holding the block's reduction tree.
extern "C" __global__ void bpnn_layerforward_CUDA(float *input_cuda, float *output_hidden_cuda,
                                                  float *input_hidden_cuda,
                                                  float *hidden_partial_sum, int in, int hid)
{
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;

    int index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    int index_in = HEIGHT * by + ty + 1;

    __shared__ float input_node[HEIGHT];
    __shared__ float weight_matrix[HEIGHT][WIDTH];

    if (tx == 0)
        input_node[ty] = input_cuda[index_in];
    __syncthreads();

    weight_matrix[ty][tx] = input_hidden_cuda[index];
    __syncthreads();

    weight_matrix[ty][tx] = weight_matrix[ty][tx] * input_node[ty];
    __syncthreads();

    for (int i = 1; i <= __log2f(HEIGHT); i++) {
        int power_two = __powf(2, i);
        if (ty % power_two == 0)
            weight_matrix[ty][tx] = weight_matrix[ty][tx] + weight_matrix[ty + power_two / 2][tx];
        __syncthreads();
    }

    input_hidden_cuda[index] = weight_matrix[ty][tx];
    __syncthreads();

    if (tx == 0)
        hidden_partial_sum[by * hid + ty] = weight_matrix[tx][ty];
}

// w[r][j] += ETA * delta[j] * ly[r] + MOMENTUM * oldw[r][j] (oldw takes the step), for
// rows r >= 1 and columns j >= 1; block (0,0)'s first row also updates the bias row 0.
extern "C" __global__ void bpnn_adjust_weights_cuda(float *delta, int hid, float *ly, int in,
                                                    float *w, float *oldw)
{
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;

    int index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    int index_y = HEIGHT * by + ty + 1;
    int index_x = tx + 1;

    w[index] += ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));
    oldw[index] = ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));

    __syncthreads();

    if (ty == 0 && by == 0) {
        w[index_x] += ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
        oldw[index_x] = ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
    }
}
