// Batch work that runs on a native thread of its own while the thread that asked for it goes on:
// a pipeline thread hands a whole batch's native calls over in one step and collects the result
// later, instead of a Python worker thread waking up (taking the GIL) to make each call. Every
// time a Python thread takes the GIL back, a training loop's thread that wants it waits.
#pragma once
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "engine/kernel.h"

namespace penstock {

// The result of a task run in the background: arrays, or the exception the task threw.
class Pending {
 public:
  Pending();
  ~Pending();
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;

  // The task's outcome after it ran for `seconds`: its result, or the exception it threw (non-null).
  void finish(ArrayTuple result, std::exception_ptr error, double seconds);
  bool done() const;
  void wait() const;  // until done
  // After wait(): the result (once; later calls give an empty tuple), or the task's exception rethrown.
  ArrayTuple take();
  // How long the task ran, in seconds (0 until it finished).
  double seconds() const;

 private:
  struct State;  // defined in background.cpp (<mutex>, <condition_variable>)
  std::unique_ptr<State> state_;
};

// One native thread (named `name`, as the OS shows it; of a priority `niceness` steps lower when
// above 0, engine/thread_priority.h) running tasks in submission order. Closing (or destroying) it
// runs the tasks already submitted, then joins the thread; closing again, from any thread, does
// nothing more.
class Background {
 public:
  explicit Background(const std::string& name, int niceness = 0);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Runs `task` after the tasks submitted before it; what it returns or throws completes the result.
  std::shared_ptr<Pending> submit(std::function<ArrayTuple()> task);
  void close();

 private:
  struct Queue;  // defined in background.cpp (<thread>)
  std::unique_ptr<Queue> queue_;
};

}  // namespace penstock
