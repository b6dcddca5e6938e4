#pragma once
// Errors as values: Status carries a canonical code and a message that says what was wrong
// and where; StatusOr<T> holds either a T or a non-OK Status. Nothing here throws, so the
// library builds with -fno-exceptions.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "pjrt_lite/core/version.hpp"
#include <variant>

namespace pjrt_lite::inline v0_1 {

/// The canonical error space shared by Abseil, gRPC and XLA.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

/// The upper-snake-case name of a code, e.g. "INVALID_ARGUMENT".
constexpr std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

/// Concatenates anything that streams into a std::string: str_cat("dim ", i, " is ", d).
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return std::move(os).str();
}

/// An OK value or an error code with a message. OK costs one null pointer; errors share
/// their payload, so copying a Status never allocates.
class [[nodiscard]] Status {
 public:
  /// OK.
  Status() noexcept = default;
  Status(StatusCode code, std::string_view message)
      : rep_(code == StatusCode::kOk ? nullptr
                                     : std::make_shared<const Rep>(Rep{code, std::string(message)})) {}

  [[nodiscard]] bool ok() const noexcept { return rep_ == nullptr; }
  [[nodiscard]] StatusCode code() const noexcept { return rep_ ? rep_->code : StatusCode::kOk; }
  /// Empty for OK.
  [[nodiscard]] std::string_view message() const noexcept {
    return rep_ ? std::string_view(rep_->message) : std::string_view();
  }
  /// "INVALID_ARGUMENT: message", or "OK".
  [[nodiscard]] std::string to_string() const {
    if (ok()) return "OK";
    return str_cat(status_code_name(code()), ": ", message());
  }
  /// The same code with `context` put in front of the message: "context: message".
  [[nodiscard]] Status with_context(std::string_view context) const {
    if (ok()) return *this;
    return Status(code(), str_cat(context, ": ", message()));
  }
  /// Marks an error as deliberately dropped.
  void ignore_error() const noexcept {}

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code() == b.code() && a.message() == b.message();
  }
  friend std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.to_string(); }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;
};

inline Status ok_status() { return Status(); }
inline Status cancelled_error(std::string_view m) { return {StatusCode::kCancelled, m}; }
inline Status unknown_error(std::string_view m) { return {StatusCode::kUnknown, m}; }
inline Status invalid_argument_error(std::string_view m) { return {StatusCode::kInvalidArgument, m}; }
inline Status deadline_exceeded_error(std::string_view m) { return {StatusCode::kDeadlineExceeded, m}; }
inline Status not_found_error(std::string_view m) { return {StatusCode::kNotFound, m}; }
inline Status already_exists_error(std::string_view m) { return {StatusCode::kAlreadyExists, m}; }
inline Status resource_exhausted_error(std::string_view m) { return {StatusCode::kResourceExhausted, m}; }
inline Status failed_precondition_error(std::string_view m) { return {StatusCode::kFailedPrecondition, m}; }
inline Status aborted_error(std::string_view m) { return {StatusCode::kAborted, m}; }
inline Status out_of_range_error(std::string_view m) { return {StatusCode::kOutOfRange, m}; }
inline Status unimplemented_error(std::string_view m) { return {StatusCode::kUnimplemented, m}; }
inline Status internal_error(std::string_view m) { return {StatusCode::kInternal, m}; }
inline Status unavailable_error(std::string_view m) { return {StatusCode::kUnavailable, m}; }
inline Status data_loss_error(std::string_view m) { return {StatusCode::kDataLoss, m}; }

namespace detail {
/// Reaching a value that is not there is a programming error, not a runtime one: it aborts
/// with the status, the way a failed assertion would.
[[noreturn]] inline void die_on_bad_access(const Status& status) {
  std::fprintf(stderr, "pjrt_lite: value() of a StatusOr holding an error: %s\n",
               status.to_string().c_str());
  std::abort();
}
}  // namespace detail

/// Either a T or a non-OK Status. Constructing one from an OK Status is a programming error
/// and yields an INTERNAL error instead.
template <class T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_reference_v<T>, "StatusOr<T&> is not supported; use a pointer");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "StatusOr<Status> is ambiguous");

 public:
  using value_type = T;

  StatusOr(const Status& status) : v_(status) { check_not_ok(); }  // NOLINT: implicit by design
  StatusOr(Status&& status) : v_(std::move(status)) { check_not_ok(); }  // NOLINT
  template <class U = T>
    requires std::is_constructible_v<T, U&&> &&
             (!std::is_same_v<std::remove_cvref_t<U>, StatusOr>) &&
             (!std::is_same_v<std::remove_cvref_t<U>, Status>) &&
             (!std::is_same_v<std::remove_cvref_t<U>, std::in_place_t>)
  StatusOr(U&& value) : v_(std::in_place_index<1>, std::forward<U>(value)) {}  // NOLINT
  template <class... Args>
  explicit StatusOr(std::in_place_t, Args&&... args)
      : v_(std::in_place_index<1>, std::forward<Args>(args)...) {}

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 1; }
  /// OK when a value is held.
  [[nodiscard]] Status status() const { return ok() ? Status() : std::get<0>(v_); }

  T& value() & {
    if (!ok()) detail::die_on_bad_access(std::get<0>(v_));
    return *std::get_if<1>(&v_);
  }
  const T& value() const& {
    if (!ok()) detail::die_on_bad_access(std::get<0>(v_));
    return *std::get_if<1>(&v_);
  }
  T&& value() && { return std::move(value()); }
  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<1>(v_) : static_cast<T>(std::forward<U>(fallback));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(value()); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void check_not_ok() {
    if (std::get<0>(v_).ok()) v_ = internal_error("StatusOr constructed from an OK Status");
  }
  std::variant<Status, T> v_;
};

namespace detail {
inline const Status& to_status(const Status& s) { return s; }
template <class T>
Status to_status(const StatusOr<T>& s) { return s.status(); }
}  // namespace detail

}  // namespace pjrt_lite

#define PJRT_LITE_CONCAT_IMPL_(a, b) a##b
#define PJRT_LITE_CONCAT_(a, b) PJRT_LITE_CONCAT_IMPL_(a, b)

/// Returns from the enclosing function if `expr` (a Status or StatusOr) is an error.
#define PJRT_LITE_RETURN_IF_ERROR(expr)                                          \
  do {                                                                           \
    if (auto pjrt_lite_status_ = ::pjrt_lite::detail::to_status(expr);           \
        !pjrt_lite_status_.ok())                                                 \
      return pjrt_lite_status_;                                                  \
  } while (false)

/// `PJRT_LITE_ASSIGN_OR_RETURN(auto x, make_x());` declares x from the value of a StatusOr,
/// or returns its error from the enclosing function.
#define PJRT_LITE_ASSIGN_OR_RETURN(lhs, expr) \
  PJRT_LITE_ASSIGN_OR_RETURN_IMPL_(PJRT_LITE_CONCAT_(pjrt_lite_statusor_, __LINE__), lhs, expr)
#define PJRT_LITE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(tmp).value()
