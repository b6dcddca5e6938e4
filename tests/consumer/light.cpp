// Uses only the light headers: no kernels, no Eigen Tensor module.
#include <pjrt_lite/core/status.hpp>
#include <pjrt_lite/future.hpp>

/// 21, by way of a promise fulfilled after a continuation was attached to its future.
pjrt_lite::StatusOr<int> half_of_42() {
  auto [promise, future] = pjrt_lite::make_promise<int>();
  pjrt_lite::Future<int> half = future.map([](int v) { return v / 2; });
  promise.set_value(42);
  return half.await();
}
