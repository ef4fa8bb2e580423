// HANDSHAKE: kernels that can finish only side by side with other work of their context
// (the concurrent-streams tests, docs/scheduling.md "Streams").

// Raise flags[me] (0 -> 1), then spin until flags[a] and flags[b] are nonzero (atomic reads, so
// neither the engine's compiler nor nvcc may hoist them).  Two launches (me 0, waiting for
// 1 and 2; me 1, waiting for 0 and 2) end only once both ran at the same time and something
// else (a copy on a third stream) wrote flags[2].  Run one after the other, the first spins
// until its watchdog kills it.  Launch (1,1,1)x(1,1,1).
extern "C" __global__ void handshake(unsigned int *flags, unsigned int me, unsigned int a,
                                     unsigned int b)
{
    atomicAdd(&flags[me], 1u);
    while (atomicAdd(&flags[a], 0u) == 0u || atomicAdd(&flags[b], 0u) == 0u) {
    }
}
