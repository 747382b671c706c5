// A gate for operations that may run side by side but not across a switch: a lookup or an
// insert holds a Pass while it works with one embedding model; a Switch (a rotation's move to a
// new model) waits until none is in flight and holds new ones back meanwhile (about a
// millisecond in the Redis cache). Unlike a reader-preferring rwlock, a steady stream of passes
// cannot starve a switch.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>

namespace frugal::cache {

class SwitchGate {
 public:
  class Pass {
   public:
    explicit Pass(SwitchGate& g) : g_(g) {
      std::unique_lock<std::mutex> l(g_.mu_);
      g_.cv_.wait(l, [this] { return !g_.switching_; });
      ++g_.active_;
    }
    ~Pass() {
      std::lock_guard<std::mutex> l(g_.mu_);
      if (--g_.active_ == 0) g_.cv_.notify_all();
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    SwitchGate& g_;
  };
  class Switch {
   public:
    explicit Switch(SwitchGate& g) : g_(g) {
      std::unique_lock<std::mutex> l(g_.mu_);
      g_.cv_.wait(l, [this] { return !g_.switching_; });
      g_.switching_ = true;
      g_.cv_.wait(l, [this] { return g_.active_ == 0; });
    }
    ~Switch() {
      std::lock_guard<std::mutex> l(g_.mu_);
      g_.switching_ = false;
      g_.cv_.notify_all();
    }
    Switch(const Switch&) = delete;
    Switch& operator=(const Switch&) = delete;

   private:
    SwitchGate& g_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
  bool switching_ = false;
};

}  // namespace frugal::cache
