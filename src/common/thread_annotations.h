// Clang's thread-safety analysis (-Wthread-safety, on in the clang build): a member marked
// FRUGAL_GUARDED_BY(mu_) may be touched only with mu_ held, and a function marked
// FRUGAL_REQUIRES(mu_) only called with it held; the compiler checks both. GCC ignores the
// annotations.
//
// std::mutex carries no annotations in libstdc++, so guarded state uses Mutex, MutexLock,
// CondVar, and SharedMutex with ReaderLock/WriterLock, from here (leveldb's port::Mutex,
// absl::Mutex). A CondVar waits in a loop the caller writes, `while (!ready_) cv_.Wait(mu_);`, so
// the condition is read where the lock is known to be held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define FRUGAL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FRUGAL_THREAD_ANNOTATION(x)
#endif

#define FRUGAL_CAPABILITY(x) FRUGAL_THREAD_ANNOTATION(capability(x))
#define FRUGAL_SCOPED_CAPABILITY FRUGAL_THREAD_ANNOTATION(scoped_lockable)
#define FRUGAL_GUARDED_BY(x) FRUGAL_THREAD_ANNOTATION(guarded_by(x))
#define FRUGAL_PT_GUARDED_BY(x) FRUGAL_THREAD_ANNOTATION(pt_guarded_by(x))
#define FRUGAL_REQUIRES(...) FRUGAL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define FRUGAL_ACQUIRE(...) FRUGAL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define FRUGAL_RELEASE(...) FRUGAL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define FRUGAL_REQUIRES_SHARED(...) \
  FRUGAL_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define FRUGAL_ACQUIRE_SHARED(...) FRUGAL_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define FRUGAL_RELEASE_SHARED(...) FRUGAL_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define FRUGAL_EXCLUDES(...) FRUGAL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define FRUGAL_NO_THREAD_SAFETY_ANALYSIS FRUGAL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace frugal {

class FRUGAL_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() FRUGAL_ACQUIRE() { mu_.lock(); }
  void unlock() FRUGAL_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class FRUGAL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) FRUGAL_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() FRUGAL_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A reader-writer mutex: many readers (ReaderLock) or one writer (WriterLock). A member guarded
// by it may be read under either lock and written only under WriterLock.
class FRUGAL_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  void lock() FRUGAL_ACQUIRE() { mu_.lock(); }
  void unlock() FRUGAL_RELEASE() { mu_.unlock(); }
  void lock_shared() FRUGAL_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() FRUGAL_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (reading) for its scope.
class FRUGAL_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) FRUGAL_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() FRUGAL_RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex exclusively (writing) for its scope.
class FRUGAL_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) FRUGAL_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() FRUGAL_RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable for a Mutex the caller holds. Wakes may be spurious: wait in a loop.
class CondVar {
 public:
  void Wait(Mutex& mu) FRUGAL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // false when the time ran out.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
      FRUGAL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& d) FRUGAL_REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + d);
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace frugal
