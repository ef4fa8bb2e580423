// Structured and sparse grids as Rodinia, Parboil and SHOC write them: a 2D Jacobi step
// with a shared halo, a 3D 7-point stencil over a 3D grid, a 2D convolution whose filter
// lives in __constant__ memory, CSR SpMV (scalar and one warp per row), and BFS over
// frontier flags driven by a host loop.

#define BX 16
#define BY 16

extern "C" __global__ void jacobi2d(const float *in, float *out, int nx, int ny)
{
    __shared__ float s[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool in_grid = x < nx && y < ny;
    s[ty][tx] = in_grid ? in[y * nx + x] : 0.0f;
    if (threadIdx.x == 0) s[ty][0] = (x > 0 && y < ny) ? in[y * nx + x - 1] : 0.0f;
    if (threadIdx.x == BX - 1) s[ty][BX + 1] = (x + 1 < nx && y < ny) ? in[y * nx + x + 1] : 0.0f;
    if (threadIdx.y == 0) s[0][tx] = (y > 0 && x < nx) ? in[(y - 1) * nx + x] : 0.0f;
    if (threadIdx.y == BY - 1) s[BY + 1][tx] = (y + 1 < ny && x < nx) ? in[(y + 1) * nx + x] : 0.0f;
    __syncthreads();
    if (in_grid) {
        if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)
            out[y * nx + x] = s[ty][tx];
        else
            out[y * nx + x] = 0.25f * (s[ty - 1][tx] + s[ty + 1][tx] + s[ty][tx - 1] + s[ty][tx + 1]);
    }
}

extern "C" __global__ void stencil3d(const double *in, double *out, int nx, int ny, int nz,
                                     double c0, double c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < 1 || y < 1 || z < 1 || x >= nx - 1 || y >= ny - 1 || z >= nz - 1)
        return;
    size_t i = ((size_t)z * ny + y) * nx + x;
    size_t sy = nx, sz = (size_t)nx * ny;
    out[i] = c0 * in[i] + c1 * (in[i - 1] + in[i + 1] + in[i - sy] + in[i + sy] + in[i - sz] +
                                in[i + sz]);
}

#define RADIUS 2
#define FW (2 * RADIUS + 1)
__constant__ float filter[FW * FW];

extern "C" __global__ void convolve2d(const float *in, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    float s = 0.0f;
    for (int dy = -RADIUS; dy <= RADIUS; dy++)
        for (int dx = -RADIUS; dx <= RADIUS; dx++) {
            int xx = min(max(x + dx, 0), w - 1), yy = min(max(y + dy, 0), h - 1);
            s += filter[(dy + RADIUS) * FW + dx + RADIUS] * in[yy * w + xx];
        }
    out[y * w + x] = s;
}

extern "C" __global__ void spmv_csr_scalar(const int *rowptr, const int *cols, const float *vals,
                                           const float *x, float *y, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int k = rowptr[r]; k < rowptr[r + 1]; k++)
            s += vals[k] * __ldg(&x[cols[k]]);
        y[r] = s;
    }
}

extern "C" __global__ void spmv_csr_vector(const int *rowptr, const int *cols, const float *vals,
                                           const float *x, float *y, int rows)
{
    int lane = threadIdx.x & 31;
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (r >= rows)
        return;
    float s = 0.0f;
    for (int k = rowptr[r] + lane; k < rowptr[r + 1]; k += 32)
        s += vals[k] * x[cols[k]];
    for (int off = 16; off; off >>= 1)
        s += __shfl_down_sync(0xffffffff, s, off);
    if (lane == 0)
        y[r] = s;
}

struct Node {
    int start;
    int degree;
};

extern "C" __global__ void bfs_expand(const Node *nodes, const int *edges, bool *frontier,
                                      bool *updating, const bool *visited, int *cost, int n)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n && frontier[tid]) {
        frontier[tid] = false;
        for (int e = nodes[tid].start; e < nodes[tid].start + nodes[tid].degree; e++) {
            int id = edges[e];
            if (!visited[id]) {
                cost[id] = cost[tid] + 1;
                updating[id] = true;
            }
        }
    }
}

extern "C" __global__ void bfs_update(bool *frontier, bool *updating, bool *visited, int *over,
                                      int n)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n && updating[tid]) {
        frontier[tid] = true;
        visited[tid] = true;
        *over = 1;
        updating[tid] = false;
    }
}
