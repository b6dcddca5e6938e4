#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// triangular_solve on the CPU: each batch's matrices are copied into kernel scratch in the
// compute type (f16 and bf16 in float, the others in their own) and solved in place by Eigen's
// triangular solver, then rounded back. Batches split across threads, each with its own
// scratch: a run allocates nothing.

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class TriangularSolveKernel final : public Kernel {
 public:
  /// Plans triangular_solve(a, b) -> result with `attrs` (checked by shape inference); all
  /// three arrays dense row-major.
  TriangularSolveKernel(const Shape& a, const Shape& b, const TriangularSolveAttrs& attrs,
                        int max_workers, std::int32_t a_slot, std::int32_t b_slot,
                        std::int32_t dst_slot)
      : attrs_(attrs), dtype_(a.dtype()), a_slot_(a_slot), b_slot_(b_slot), dst_slot_(dst_slot),
        workers_(std::max(max_workers, 1)) {
    const std::int64_t r = a.rank();
    m_ = a.dim(r - 1);
    rows_ = b.dim(r - 2);
    cols_ = b.dim(r - 1);
    batches_ = m_ == 0 || rows_ * cols_ == 0 ? 0 : b.element_count() / (rows_ * cols_);
    const auto compute_size = static_cast<std::int64_t>(
        is_complex(dtype_) ? byte_size(dtype_) : std::max<std::size_t>(byte_size(dtype_), 4));
    per_worker_ = ((m_ * m_ + rows_ * cols_) * compute_size + 63) / 64 * 64;
    scratch_bytes = per_worker_ * workers_;
    flops = static_cast<double>(batches_) * static_cast<double>(m_) * static_cast<double>(m_) *
            static_cast<double>(attrs.left_side ? cols_ : rows_);
    bytes_accessed = a.byte_size() + 2 * b.byte_size();
  }

  void run(const RunContext& ctx) const override {
    if (batches_ == 0) return;
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
      if constexpr (is_complex_v<T> || is_float_v<T>) run_typed<T>(ctx);
    });
  }

 private:
  template <class T>
  void run_typed(const RunContext& ctx) const {
    // f16 and bf16 solve in float and round once; Eigen has no fast path for them.
    using C = std::conditional_t<is_complex_v<T> || std::is_floating_point_v<T>, T, float>;
    using Matrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const T* a = reinterpret_cast<const T*>(ctx.slots[a_slot_]);
    const T* b = reinterpret_cast<const T*>(ctx.slots[b_slot_]);
    T* out = reinterpret_cast<T*>(ctx.slots[dst_slot_]);
    auto body = [&](std::int64_t begin, std::int64_t end, int worker) {
      C* scratch = reinterpret_cast<C*>(ctx.scratch + worker * per_worker_);
      Eigen::Map<Matrix> ma(scratch, m_, m_);
      Eigen::Map<Matrix> mb(scratch + m_ * m_, rows_, cols_);
      for (std::int64_t batch = begin; batch < end; ++batch) {
        const T* ab = a + batch * m_ * m_;
        const T* bb = b + batch * rows_ * cols_;
        for (std::int64_t i = 0; i < m_ * m_; ++i) ma.data()[i] = static_cast<C>(ab[i]);
        for (std::int64_t i = 0; i < rows_ * cols_; ++i) mb.data()[i] = static_cast<C>(bb[i]);
        if (attrs_.lower)
          attrs_.unit_diagonal ? solve<Eigen::UnitLower>(ma, mb) : solve<Eigen::Lower>(ma, mb);
        else
          attrs_.unit_diagonal ? solve<Eigen::UnitUpper>(ma, mb) : solve<Eigen::Upper>(ma, mb);
        T* ob = out + batch * rows_ * cols_;
        for (std::int64_t i = 0; i < rows_ * cols_; ++i) ob[i] = static_cast<T>(mb.data()[i]);
      }
    };
    if (workers_ > 1 && batches_ > 1 && batches_ * m_ * m_ * std::max(rows_, cols_) >= (1 << 16))
      ctx.parallel(batches_, 1, body);
    else
      body(0, batches_, 0);
  }

  /// Solves op(a) x = b or x op(a) = b in place in `b`, reading the `Mode` triangle of `a`.
  template <int Mode, class MA, class MB>
  void solve(const MA& a, MB& b) const {
    const auto tri = a.template triangularView<Mode>();
    const Transpose t = attrs_.transpose_a;
    if (attrs_.left_side) {
      if (t == Transpose::kNoTranspose) tri.solveInPlace(b);
      else if (t == Transpose::kTranspose) tri.transpose().solveInPlace(b);
      else tri.adjoint().solveInPlace(b);
    } else {
      if (t == Transpose::kNoTranspose) tri.template solveInPlace<Eigen::OnTheRight>(b);
      else if (t == Transpose::kTranspose) tri.transpose().template solveInPlace<Eigen::OnTheRight>(b);
      else tri.adjoint().template solveInPlace<Eigen::OnTheRight>(b);
    }
  }

  TriangularSolveAttrs attrs_;
  DType dtype_;
  std::int32_t a_slot_, b_slot_, dst_slot_;
  int workers_;
  std::int64_t m_ = 0, rows_ = 0, cols_ = 0, batches_ = 0, per_worker_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
