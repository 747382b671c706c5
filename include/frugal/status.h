// Status and StatusOr<T>: how every fallible Frugal call reports failure.
//
// No exceptions cross a Frugal API on the request path; library exceptions are caught at the
// boundary and turned into a Status. A Status is cheap to copy when OK (no allocation).
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace frugal {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong (bad flag, bad JSON, prompt too long)
  kNotFound,           // a file, tensor or key is missing
  kDataLoss,           // a file is truncated or corrupt
  kUnimplemented,      // valid input that this build does not support (unknown architecture)
  kOutOfRange,         // a value outside the allowed range (context length, max_tokens)
  kResourceExhausted,  // queue full, out of KV blocks
  kInternal,           // a bug: an invariant broke
  kIoError,            // the OS refused (open, mmap, read)
  kDeadlineExceeded,   // a request ran past its deadline
  kCancelled,          // the caller gave up on the work
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prepends context ("loading blk.3.attn_q.weight: ") to the message of a failed status.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

const char* StatusCodeName(StatusCode code);

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  StatusOr(T value) : v_(std::move(value)) {}                                              // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace frugal

#define FRUGAL_CONCAT_INNER(a, b) a##b
#define FRUGAL_CONCAT(a, b) FRUGAL_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` failed.
#define FRUGAL_RETURN_IF_ERROR(expr) \
  do {                               \
    ::frugal::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

// `FRUGAL_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a StatusOr or returns its error.
#define FRUGAL_ASSIGN_OR_RETURN(lhs, expr) \
  FRUGAL_ASSIGN_OR_RETURN_IMPL(FRUGAL_CONCAT(_statusor_, __LINE__), lhs, expr)
// tmp is a name and lhs a declaration: neither can be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FRUGAL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
