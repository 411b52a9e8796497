#include "kernels/custom.h"

#include <type_traits>

#include "include/penstock_plugin.h"

namespace penstock {

extern "C" void plugin_parallel_for(void* pool, int64_t n, void (*body)(void* user, int64_t i), void* user) {
  static_cast<ThreadPool*>(pool)->parallel_for(n, [body, user](int64_t i) { body(user, i); });
}

// The ABI's declaration and the engine's definition must agree.
static_assert(std::is_same_v<decltype(&plugin_parallel_for), decltype(penstock_context::parallel_for)>);

uintptr_t plugin_parallel_for_address() { return reinterpret_cast<uintptr_t>(&plugin_parallel_for); }

uintptr_t thread_pool_address(ThreadPool& pool) { return reinterpret_cast<uintptr_t>(&pool); }

}  // namespace penstock
