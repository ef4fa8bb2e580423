// Rodinia BFS: level-synchronous breadth-first search over a CSR graph.
// Port of Rodinia 3.1 bfs/kernel.cu and kernel2.cu (`Kernel`, `Kernel2`), bool arrays as
// bytes. Launch both: block (MAX_THREADS_PER_BLOCK,1,1) or (n,1,1) when n < 512,
// grid ceil(n/512). Host loop: clear *g_over, Kernel, Kernel2, repeat while *g_over.

#define MAX_THREADS_PER_BLOCK 512

typedef struct Node {
    int starting;
    int no_of_edges;
} Node;

// Expand the frontier (g_graph_mask): every unvisited neighbour gets cost + 1 and is marked
// for the next frontier.
extern "C" __global__ void Kernel(Node *g_graph_nodes, int *g_graph_edges, bool *g_graph_mask,
                                  bool *g_updating_graph_mask, bool *g_graph_visited,
                                  int *g_cost, int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_graph_mask[tid]) {
        g_graph_mask[tid] = false;
        for (int i = g_graph_nodes[tid].starting;
             i < (g_graph_nodes[tid].no_of_edges + g_graph_nodes[tid].starting); i++) {
            int id = g_graph_edges[i];
            if (!g_graph_visited[id]) {
                g_cost[id] = g_cost[tid] + 1;
                g_updating_graph_mask[id] = true;
            }
        }
    }
}

// Promote the marked nodes to the next frontier and flag that another round is needed.
extern "C" __global__ void Kernel2(bool *g_graph_mask, bool *g_updating_graph_mask,
                                   bool *g_graph_visited, bool *g_over, int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_updating_graph_mask[tid]) {
        g_graph_mask[tid] = true;
        g_graph_visited[tid] = true;
        *g_over = true;
        g_updating_graph_mask[tid] = false;
    }
}
