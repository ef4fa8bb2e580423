// The programs' kernels as a CUDA application: the runtime API (cudaMalloc, cudaMemcpy,
// cudaMemcpyToSymbol, <<<>>> with dynamic shared memory, host loops of launches,
// events), each result checked on the host.  Prints "<name> ok" or "<name> FAIL ..." per
// workload and exits non-zero if any failed.  Built by nvcc -cudart shared and run on
// gdevd through scripts/gdev-run (tests/programs/test_app.py).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../cuda/grids.cu"
#include "../cuda/matrix.cu"
#include "../cuda/reduce.cu"
#include "../cuda/sorting.cu"

#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            printf("%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_));  \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

static int failures = 0;

static void report(const char *name, bool ok, double detail)
{
    if (ok)
        printf("%s ok\n", name);
    else
        printf("%s FAIL %g\n", name, detail);
    failures += !ok;
}

template <typename T> static T *upload(const std::vector<T> &h)
{
    T *d;
    CK(cudaMalloc(&d, h.size() * sizeof(T)));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<T> download(const T *d, size_t n)
{
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static void sgemm(void)
{
    const int m = 67, n = 45, k = 80;
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
    for (int i = 0; i < m * k; i++) a[i] = (float)((i * 37) % 17) - 8.0f;
    for (int i = 0; i < k * n; i++) b[i] = (float)((i * 11) % 13) - 6.0f;
    float *da = upload(a), *db = upload(b), *dc = upload(c);
    dim3 grid((n + 15) / 16, (m + 15) / 16), block(16, 16);
    gemm_tiled<float, 16><<<grid, block>>>(da, db, dc, m, n, k, 1.0f, 0.0f);
    CK(cudaGetLastError());
    std::vector<float> got = download(dc, m * n);
    double worst = 0;       // small integers: every product and sum is exact
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int q = 0; q < k; q++) s += (double)a[i * k + q] * b[q * n + j];
            worst = fmax(worst, fabs(s - got[i * n + j]));
        }
    report("sgemm", worst == 0, worst);
    cudaFree(da); cudaFree(db); cudaFree(dc);
}

static void scan(void)
{
    const int n = 3000, block = 128, per = 2 * block;
    const int nb = (n + per - 1) / per;
    std::vector<unsigned> h(n);
    for (int i = 0; i < n; i++) h[i] = (i * 7919u) % 1000u;
    unsigned *din = upload(h), *dout, *dsums, *dsums2, *dtop;
    CK(cudaMalloc(&dout, n * 4)); CK(cudaMalloc(&dsums, nb * 4));
    CK(cudaMalloc(&dsums2, nb * 4)); CK(cudaMalloc(&dtop, 4));
    size_t shared = (per + per / 32 + 1) * 4;
    scan_blelloch<<<nb, block, shared>>>(din, dout, dsums, n);
    scan_blelloch<<<1, block, shared>>>(dsums, dsums2, dtop, nb);   // nb <= 2 * block
    scan_add<<<nb, block>>>(dout, dsums2, n);
    std::vector<unsigned> got = download(dout, n);
    unsigned s = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) { bad += got[i] != s; s += h[i]; }
    report("scan", bad == 0, bad);
    cudaFree(din); cudaFree(dout); cudaFree(dsums); cudaFree(dsums2); cudaFree(dtop);
}

static void histogram_and_sort(void)
{
    const int words = 5000;
    std::vector<unsigned> h(words), bins(256, 0);
    for (int i = 0; i < words; i++) h[i] = (unsigned)i * 2654435761u;
    unsigned *dd = upload(h), *dh = upload(bins);
    histogram256<<<6, 128>>>(dd, dh, words);
    std::vector<unsigned> got = download(dh, 256), want(256, 0);
    for (int i = 0; i < words; i++)
        for (int b = 0; b < 4; b++) want[(h[i] >> (8 * b)) & 0xFF]++;
    report("histogram", got == want, 0);

    const int n = 1024;
    std::vector<float> a(n);
    for (int i = 0; i < n; i++) a[i] = sinf((float)i * 12.9898f) * 1000.0f;
    float *da = upload(a);
    cudaEvent_t t0, t1;
    CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&t1));
    CK(cudaEventRecord(t0));
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1)
            bitonic_step<<<n / 256, 256>>>(da, j, k);
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    std::vector<float> s = download(da, n);
    bool sorted = ms >= 0;
    for (int i = 1; i < n; i++) sorted &= s[i - 1] <= s[i];
    report("bitonic", sorted, ms);
    cudaFree(dd); cudaFree(dh); cudaFree(da);
}

static void convolution(void)
{
    const int w = 50, h = 33;
    float f[FW * FW];
    for (int i = 0; i < FW * FW; i++) f[i] = (float)(i % 5) - 2.0f;
    CK(cudaMemcpyToSymbol(filter, f, sizeof f));
    std::vector<float> img(w * h);
    for (int i = 0; i < w * h; i++) img[i] = (float)((i * 13) % 9);
    float *di = upload(img), *dout;
    CK(cudaMalloc(&dout, w * h * 4));
    convolve2d<<<dim3((w + 15) / 16, (h + 7) / 8), dim3(16, 8)>>>(di, dout, w, h);
    std::vector<float> got = download(dout, w * h);
    double worst = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int dy = -RADIUS; dy <= RADIUS; dy++)
                for (int dx = -RADIUS; dx <= RADIUS; dx++) {
                    int xx = std::min(std::max(x + dx, 0), w - 1);
                    int yy = std::min(std::max(y + dy, 0), h - 1);
                    s += f[(dy + RADIUS) * FW + dx + RADIUS] * img[yy * w + xx];
                }
            worst = fmax(worst, fabs(s - got[y * w + x]));
        }
    report("convolution", worst == 0, worst);
    cudaFree(di); cudaFree(dout);
}

static void bfs(void)
{
    const int n = 2000;
    std::vector<Node> nodes(n);
    std::vector<int> edges;
    for (int u = 0; u < n; u++) {
        nodes[u].start = (int)edges.size();
        int deg = 1 + (u * 7) % 3;
        for (int e = 0; e < deg; e++) edges.push_back((u * 31 + e * 977 + 1) % n);
        nodes[u].degree = deg;
    }
    std::vector<char> mask(n, 0), vis(n, 0), upd(n, 0);
    std::vector<int> cost(n, -1);
    mask[0] = vis[0] = 1;
    cost[0] = 0;
    Node *dn = upload(nodes);
    int *de = upload(edges), *dc = upload(cost), *dover;
    bool *dm = (bool *)upload(mask), *dv = (bool *)upload(vis), *du = (bool *)upload(upd);
    CK(cudaMalloc(&dover, 4));
    int over = 1, levels = 0;
    while (over) {
        over = 0;
        CK(cudaMemcpy(dover, &over, 4, cudaMemcpyHostToDevice));
        bfs_expand<<<(n + 255) / 256, 256>>>(dn, de, dm, du, dv, dc, n);
        bfs_update<<<(n + 255) / 256, 256>>>(dm, du, dv, dover, n);
        CK(cudaMemcpy(&over, dover, 4, cudaMemcpyDeviceToHost));
        levels++;
    }
    std::vector<int> got = download(dc, n), want(n, -1), frontier(1, 0), next;
    want[0] = 0;
    while (!frontier.empty()) {
        next.clear();
        for (int u : frontier)
            for (int e = nodes[u].start; e < nodes[u].start + nodes[u].degree; e++)
                if (want[edges[e]] < 0) { want[edges[e]] = want[u] + 1; next.push_back(edges[e]); }
        frontier.swap(next);
    }
    report("bfs", got == want, levels);
    cudaFree(dn); cudaFree(de); cudaFree(dc); cudaFree(dm); cudaFree(dv); cudaFree(du);
    cudaFree(dover);
}

int main(void)
{
    sgemm();
    scan();
    histogram_and_sort();
    convolution();
    bfs();
    CK(cudaDeviceSynchronize());
    printf("suite_app %s\n", failures ? "FAILED" : "passed");
    return failures != 0;
}
