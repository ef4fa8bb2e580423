// 3D pitched memory: cudaMalloc3D, cudaMemset3D, cudaMemcpy3D host -> device (a sub-box at an
// offset), a kernel over the volume, cudaMemcpy3D back; checked on the host.
#include <cstdio>

__global__ void bump(cudaPitchedPtr p, int nx, int ny, int nz)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < nx && y < ny && z < nz) {
        char *slice = (char *)p.ptr + z * p.pitch * ny;
        ((float *)(slice + y * p.pitch))[x] += 1.0f;
    }
}

int main()
{
    const int nx = 20, ny = 7, nz = 5;
    static float h[nz][ny][nx], back[nz][ny][nx];
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++)
                h[z][y][x] = z * 1000 + y * 100 + x;
    cudaExtent e = make_cudaExtent(nx * sizeof(float), ny, nz);
    cudaPitchedPtr d;
    cudaMalloc3D(&d, e);
    cudaMemset3D(d, 0, e);
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(h, nx * sizeof(float), nx, ny);
    up.dstPtr = d;
    up.srcPos = make_cudaPos(4 * sizeof(float), 1, 1);     // the box from (4, 1, 1)
    up.dstPos = up.srcPos;
    up.extent = make_cudaExtent(8 * sizeof(float), 3, 2);
    up.kind = cudaMemcpyHostToDevice;
    cudaError_t e1 = cudaMemcpy3D(&up);
    bump<<<dim3(ny, nz), nx>>>(d, nx, ny, nz);
    cudaMemcpy3DParms down = {};
    down.srcPtr = d;
    down.dstPtr = make_cudaPitchedPtr(back, nx * sizeof(float), nx, ny);
    down.extent = e;
    down.kind = cudaMemcpyDeviceToHost;
    cudaError_t e2 = cudaMemcpy3D(&down);
    int bad = 0;
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                int in = z >= 1 && z < 3 && y >= 1 && y < 4 && x >= 4 && x < 12;
                bad += back[z][y][x] != (in ? h[z][y][x] : 0) + 1.0f;
            }
    printf("3d pitch=%zu copy=%s,%s bad=%d\n", d.pitch, cudaGetErrorName(e1),
           cudaGetErrorName(e2), bad);
    return bad != 0;
}
