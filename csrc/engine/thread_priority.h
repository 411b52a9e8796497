// Threads that yield their cores to the process's other threads: a data pipeline's host work beside a
// training loop, whose thread launches the model's GPU work and stalls the GPU when it waits for a core.
#pragma once

namespace penstock {

// Lowers the calling thread's CPU priority by `niceness` steps of the OS's nice scale (at most to its
// lowest, 19); 0 or less leaves it. The thread then takes cores only as the process's threads of
// normal priority leave them, and still all of them when those wait. Only where the OS gives each
// thread a priority of its own (Linux), and best effort: a sandbox that refuses it changes nothing.
void lower_calling_thread_priority(int niceness);

}  // namespace penstock
