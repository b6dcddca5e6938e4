#pragma once
// Arguments and results in short, for trace records: a buffer is its id, a shape "f32[2,3]",
// a literal its values, an error its code and message; long text is cut to one short line.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/future.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/trace/record.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// Descriptions longer than this many characters are cut, ending in "...".
inline constexpr std::size_t kMaxDescription = 96;
/// Lists show at most this many elements, then "...".
inline constexpr std::size_t kMaxListItems = 8;

namespace detail {

template <class T>
struct IsStatusOr : std::false_type {};
template <class T>
struct IsStatusOr<StatusOr<T>> : std::true_type {};
template <class T>
struct IsFuture : std::false_type {};
template <class T>
struct IsFuture<Future<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsSpan : std::false_type {};
template <class T, std::size_t N>
struct IsSpan<std::span<T, N>> : std::true_type {};
/// A vector or span of std::byte: a blob, described by its size. (A trait rather than a
/// condition on U::value_type, which is ill-formed for the types that are neither.)
template <class T>
struct IsByteSequence : std::false_type {};
template <class A>
struct IsByteSequence<std::vector<std::byte, A>> : std::true_type {};
template <class B, std::size_t N>
  requires std::is_same_v<std::remove_const_t<B>, std::byte>
struct IsByteSequence<std::span<B, N>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};
template <class T>
struct IsUniquePtr : std::false_type {};
template <class T, class D>
struct IsUniquePtr<std::unique_ptr<T, D>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

/// One line of at most kMaxDescription characters.
inline std::string shorten(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= kMaxDescription) {
      out.resize(kMaxDescription - 3);
      out += "...";
      break;
    }
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace detail

/// `value` in short. Objects with a trace_describe() member (the Traced wrappers) describe
/// themselves; other types unknown here are "{...}".
template <class T>
std::string describe(const T& value) {
  using U = std::remove_cvref_t<T>;
  if constexpr (requires { value.trace_describe(); }) {
    return value.trace_describe();
  } else if constexpr (std::is_same_v<U, Status>) {
    return value.ok() ? "OK" : detail::shorten(value.to_string());
  } else if constexpr (detail::IsStatusOr<U>::value) {
    return value.ok() ? describe(*value) : detail::shorten(value.status().to_string());
  } else if constexpr (detail::IsFuture<U>::value) {
    if (!value.is_ready()) return "pending";
    if constexpr (std::is_void_v<typename U::value_type>) {
      const Status s = value.await();
      return s.ok() ? "ready" : detail::shorten(s.to_string());
    } else {
      return describe(value.await());
    }
  } else if constexpr (std::is_same_v<U, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_integral_v<U>) {
    return std::to_string(value);
  } else if constexpr (std::is_floating_point_v<U>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(value));
    return buf;
  } else if constexpr (std::is_convertible_v<const U&, std::string_view>) {
    return detail::shorten(std::string_view(value));
  } else if constexpr (std::is_same_v<U, DType>) {
    return std::string(dtype_name(value));
  } else if constexpr (std::is_same_v<U, Shape>) {
    return value.to_string();
  } else if constexpr (std::is_same_v<U, Literal>) {
    return detail::shorten(value.to_string());
  } else if constexpr (std::is_same_v<U, HostBufferSemantics>) {
    return std::string(host_buffer_semantics_name(value));
  } else if constexpr (std::is_same_v<U, Graph>) {
    return str_cat("'", value.name(), "' (", value.num_nodes(), " nodes)");
  } else if constexpr (std::is_pointer_v<U>) {
    if (value == nullptr) return "null";
    if constexpr (requires { (*value).trace_describe(); })
      return value->trace_describe();
    else
      return detail::format_address(value);
  } else if constexpr (detail::IsUniquePtr<U>::value) {
    return describe(value.get());
  } else if constexpr (detail::IsOptional<U>::value) {
    return value ? describe(*value) : "none";
  } else if constexpr (detail::IsPair<U>::value) {
    return "(" + describe(value.first) + ", " + describe(value.second) + ")";
  } else if constexpr (detail::IsByteSequence<U>::value) {
    return str_cat(value.size(), " bytes");
  } else if constexpr (detail::IsVector<U>::value || detail::IsSpan<U>::value) {
    std::string out = "[";
    std::size_t i = 0;
    for (const auto& item : value) {
      if (i) out += ", ";
      if (i++ == kMaxListItems) {
        out += "...";
        break;
      }
      out += describe(item);
    }
    return out + "]";
  } else {
    return "{...}";
  }
}

}  // namespace pjrt_lite::trace
