// Custom operators (operators/custom.py): what a plugin's entry points call back into. A plugin is
// built against include/penstock_plugin.h only, so the engine hands it the thread pool as an opaque
// pointer and this function (by address) to run work on it.
#pragma once
#include <cstdint>

#include "engine/thread_pool.h"

namespace penstock {

// penstock_context::parallel_for: body(user, i) for i in [0, n) on `pool` (a ThreadPool*).
extern "C" void plugin_parallel_for(void* pool, int64_t n, void (*body)(void* user, int64_t i), void* user);

// The addresses Python puts into a penstock_context.
uintptr_t plugin_parallel_for_address();
uintptr_t thread_pool_address(ThreadPool& pool);

}  // namespace penstock
