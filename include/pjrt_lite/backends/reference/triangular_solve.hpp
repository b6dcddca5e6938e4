#pragma once
// The reference interpreter's triangular_solve: op(a) written out as a dense matrix (the
// triangle a is read from, ones on the diagonal when unit_diagonal, zeros elsewhere) and
// solved by plain forward or back substitution in complex<long double>, rounded once to the
// result type.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// triangular_solve: for each batch, x with op(a) x = b (left_side) or x op(a) = b.
inline Literal eval_triangular_solve(const Literal& a_in, const Literal& b_in,
                                     const TriangularSolveAttrs& attrs, const Shape& result) {
  using W = std::complex<long double>;
  const Literal a = a_in.with_default_layout(), b = b_in.with_default_layout();
  const std::size_t rank = a.dims().size();
  const auto m = static_cast<std::size_t>(a.dims()[rank - 1]);
  const auto rows = static_cast<std::size_t>(b.dims()[rank - 2]);
  const auto cols = static_cast<std::size_t>(b.dims()[rank - 1]);
  auto widen = [](const Literal& l) {
    std::vector<W> out(static_cast<std::size_t>(l.element_count()));
    visit_dtype(l.dtype(), [&]<class T>(std::type_identity<T>) {
      if constexpr (is_complex_v<T> || is_float_v<T>) {
        auto in = l.data<T>();
        for (std::size_t i = 0; i < out.size(); ++i) {
          const c128 v = convert_element<c128>(in[i]);
          out[i] = W(v.real(), v.imag());
        }
      }
    });
    return out;
  };
  const std::vector<W> av = widen(a), bv = widen(b);
  std::vector<W> xv(bv.size());
  const std::size_t batches = m == 0 || rows * cols == 0 ? 0 : bv.size() / (rows * cols);
  std::vector<W> op(m * m), rhs(m), sol(m);
  for (std::size_t batch = 0; batch < batches; ++batch) {
    // op(a)[i][j], from the triangle of a that is read.
    const W* ab = av.data() + batch * m * m;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        const bool transposed = attrs.transpose_a != Transpose::kNoTranspose;
        const std::size_t r = transposed ? j : i, c = transposed ? i : j;
        W v = (attrs.lower ? c <= r : c >= r) ? ab[r * m + c] : W(0);
        if (r == c && attrs.unit_diagonal) v = 1;
        if (attrs.transpose_a == Transpose::kAdjoint) v = std::conj(v);
        op[i * m + j] = v;
      }
    // op(a) is lower triangular when a's lower triangle is read and not transposed, or the
    // upper one is read and transposed.
    const bool op_lower = attrs.lower == (attrs.transpose_a == Transpose::kNoTranspose);
    // Left: op(a) x_k = b_k for each column k. Right: x op(a) = b is op(a)^T x_k^T = b_k^T for
    // each row k, and op(a)^T is triangular the other way.
    const std::size_t systems = attrs.left_side ? cols : rows;
    const bool lower = attrs.left_side ? op_lower : !op_lower;
    auto coef = [&](std::size_t i, std::size_t j) {
      return attrs.left_side ? op[i * m + j] : op[j * m + i];
    };
    const std::size_t base = batch * rows * cols;
    for (std::size_t k = 0; k < systems; ++k) {
      for (std::size_t i = 0; i < m; ++i)
        rhs[i] = attrs.left_side ? bv[base + i * cols + k] : bv[base + k * cols + i];
      for (std::size_t step = 0; step < m; ++step) {
        const std::size_t i = lower ? step : m - 1 - step;
        W sum = rhs[i];
        for (std::size_t j = 0; j < m; ++j)
          if (lower ? j < i : j > i) sum -= coef(i, j) * sol[j];
        sol[i] = sum / coef(i, i);
      }
      for (std::size_t i = 0; i < m; ++i)
        (attrs.left_side ? xv[base + i * cols + k] : xv[base + k * cols + i]) = sol[i];
    }
  }
  Literal out(result);
  visit_dtype(result.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T> || is_float_v<T>) {
      auto dst = out.data<T>();
      for (std::size_t i = 0; i < xv.size(); ++i)
        dst[i] = convert_element<T>(c128(static_cast<double>(xv[i].real()),
                                         static_cast<double>(xv[i].imag())));
    }
  });
  return out;
}

}  // namespace pjrt_lite::reference::detail
