/* Stream capture's state (capture.c records into it, capture_seq.c begins, ends and queries
 * sequences).  Every access holds `cap_lock`: streams of one capture may be driven from several
 * threads.  Invariant: a cap or cev slot is in use iff its seq is non-NULL, and then its
 * nodes belong to seq->graph. */
#ifndef CUDART_CAPTURE_H
#define CUDART_CAPTURE_H

#include "graph.h"

#define MAX_SEQS 64
#define MAX_CAPS 256
#define MAX_EVENTS 256

/* One capture sequence: its graph and the stream that began it (graph NULL: slot free). */
struct seq {
    struct CUgraph_st *graph;
    cudaStream_t origin;
    unsigned long long id;
    int invalid;
    int owned; /* the graph was made by BeginCapture (not BeginCaptureToGraph) */
};

/* A node set: a stream's frontier, or what an event recorded in capture stands for. */
struct nodeset {
    cudaGraphNode_t *v;
    size_t n;
};

/* A stream taking part in a sequence. */
struct cap {
    cudaStream_t stream;
    struct seq *seq;
    struct nodeset front;
};

/* An event recorded in a capturing stream. */
struct cev {
    cudaEvent_t event;
    struct seq *seq;
    struct nodeset nodes;
};

extern struct seq cap_seqs[MAX_SEQS];
extern struct cap cap_streams[MAX_CAPS];
extern struct cev cap_events[MAX_EVENTS];
extern unsigned long long cap_next_id;
extern pthread_mutex_t cap_lock;

struct cap *cap_find(cudaStream_t s);
struct cev *cap_event(cudaEvent_t e);
/* *to = a copy of nodes[0..n) (merged into *to's own nodes when merge is set). */
cudaError_t cap_nodes(struct nodeset *to, const cudaGraphNode_t *nodes, size_t n, int merge);

#endif /* CUDART_CAPTURE_H */
