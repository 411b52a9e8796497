#include "engine/background.h"

#include "engine/thread_priority.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace penstock {

struct Pending::State {
  mutable std::mutex mutex;
  mutable std::condition_variable ready;
  bool done = false;
  ArrayTuple result;
  std::exception_ptr error;
  double seconds = 0;
};

Pending::Pending() : state_(std::make_unique<State>()) {}
Pending::~Pending() = default;

void Pending::finish(ArrayTuple result, std::exception_ptr error, double seconds) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->result = std::move(result);
    state_->error = std::move(error);
    state_->seconds = seconds;
    state_->done = true;
  }
  state_->ready.notify_all();
}

double Pending::seconds() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->seconds;
}

bool Pending::done() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

void Pending::wait() const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->ready.wait(lock, [&] { return state_->done; });
}

ArrayTuple Pending::take() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->done) throw std::logic_error("Pending::take before the task finished");
  if (state_->error) std::rethrow_exception(state_->error);
  return std::move(state_->result);
}

struct Background::Queue {
  std::mutex mutex;
  std::condition_variable work;
  std::deque<std::pair<std::function<ArrayTuple()>, std::shared_ptr<Pending>>> tasks;
  bool stop = false;
  bool started = false;  // the thread runs, at its priority
  std::thread thread;
  std::mutex joining;  // close() from two threads at once joins once

  void run() {
    for (;;) {
      std::pair<std::function<ArrayTuple()>, std::shared_ptr<Pending>> next;
      {
        std::unique_lock<std::mutex> lock(mutex);
        work.wait(lock, [&] { return stop || !tasks.empty(); });
        if (tasks.empty()) return;  // stopped, and every task submitted ran
        next = std::move(tasks.front());
        tasks.pop_front();
      }
      auto start = std::chrono::steady_clock::now();
      ArrayTuple result;
      std::exception_ptr error;
      try {
        result = next.first();
      } catch (...) {
        error = std::current_exception();
      }
      next.second->finish(std::move(result), std::move(error),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      next.first = nullptr;  // what the task held (its inputs) goes now, not with the next task
    }
  }
};

Background::Background(const std::string& name, int niceness) : queue_(std::make_unique<Queue>()) {
  queue_->thread = std::thread([q = queue_.get(), niceness] {
    lower_calling_thread_priority(niceness);
    {
      std::lock_guard<std::mutex> lock(q->mutex);
      q->started = true;
    }
    q->work.notify_all();
    q->run();
  });
  pthread_setname_np(queue_->thread.native_handle(), name.substr(0, 15).c_str());  // the OS's limit
  // the thread at its priority before the first task
  std::unique_lock<std::mutex> lock(queue_->mutex);
  queue_->work.wait(lock, [q = queue_.get()] { return q->started; });
}

Background::~Background() { close(); }

void Background::close() {
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->stop = true;
  }
  queue_->work.notify_all();
  std::lock_guard<std::mutex> lock(queue_->joining);
  if (queue_->thread.joinable()) queue_->thread.join();
}

std::shared_ptr<Pending> Background::submit(std::function<ArrayTuple()> task) {
  auto pending = std::make_shared<Pending>();
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    if (queue_->stop) throw std::logic_error("Background::submit after it stopped");
    queue_->tasks.emplace_back(std::move(task), pending);
  }
  queue_->work.notify_one();
  return pending;
}

}  // namespace penstock
