#pragma once
// The reference interpreter's fft: the spec's definition taken literally, a direct discrete
// Fourier transform along each transformed dimension in long double, rounded once to the
// result type. O(n^2) per line on purpose: it is the oracle for the CPU backend's fast one.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <type_traits>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

using WideComplex = std::complex<long double>;

/// Replaces every line along `axis` of the row-major array `data` (of `dims`) with its DFT,
/// X[k] = sum_j x[j] e^(-2 pi i jk / n), or for `inverse` with (1/n) sum_j x[j] e^(+2 pi i jk / n).
inline void dft_along(std::vector<WideComplex>& data, std::span<const std::int64_t> dims,
                      std::size_t axis, bool inverse) {
  const auto n = static_cast<std::size_t>(dims[axis]);
  if (n == 0 || data.empty()) return;
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < dims.size(); ++d) inner *= static_cast<std::size_t>(dims[d]);
  const std::size_t outer = data.size() / (n * inner);
  // e^(-+2 pi i m / n) for m = jk mod n: reducing the angle first keeps every term exact to
  // long double's precision, however large jk gets.
  std::vector<WideComplex> root(n);
  const long double sign = inverse ? 1.0L : -1.0L;
  for (std::size_t m = 0; m < n; ++m) {
    const long double angle = sign * 2.0L * std::numbers::pi_v<long double> *
                              static_cast<long double>(m) / static_cast<long double>(n);
    root[m] = WideComplex(std::cos(angle), std::sin(angle));
  }
  std::vector<WideComplex> line(n);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      const std::size_t base = o * n * inner + i;
      for (std::size_t j = 0; j < n; ++j) line[j] = data[base + j * inner];
      for (std::size_t k = 0; k < n; ++k) {
        WideComplex sum = 0;
        for (std::size_t j = 0; j < n; ++j) sum += line[j] * root[(j * k) % n];
        data[base + k * inner] = inverse ? sum / static_cast<long double>(n) : sum;
      }
    }
  }
}

/// fft: FFT and IFFT transform each of the trailing fft_length.size() dimensions; RFFT is the
/// FFT of the real operand with the last dimension cut to n / 2 + 1; IRFFT extends its last
/// dimension to n by Hermitian symmetry (X[n - k] = conj(X[k])) after the inverse transforms of
/// the others, and keeps the real part of the last inverse transform.
inline Literal eval_fft(const Literal& operand, const FftAttrs& attrs, const Shape& result) {
  const Literal x = operand.with_default_layout();
  const std::size_t rank = x.dims().size();
  const std::size_t first = rank - attrs.fft_length.size();
  std::vector<std::int64_t> dims(x.dims().begin(), x.dims().end());
  std::vector<WideComplex> data(static_cast<std::size_t>(x.element_count()));
  visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T>) {
      auto in = x.data<T>();
      for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = WideComplex(static_cast<long double>(in[i].real()),
                              static_cast<long double>(in[i].imag()));
    } else if constexpr (std::is_floating_point_v<T>) {
      auto in = x.data<T>();
      for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = WideComplex(static_cast<long double>(in[i]), 0.0L);
    }
  });
  const bool inverse = attrs.fft_type == FftType::kIfft || attrs.fft_type == FftType::kIrfft;
  const std::size_t plain_end = attrs.fft_type == FftType::kIrfft ? rank - 1 : rank;
  for (std::size_t d = first; d < plain_end; ++d) dft_along(data, dims, d, inverse);

  // The values of the result in row-major order, before rounding to its type.
  std::vector<WideComplex> values(static_cast<std::size_t>(result.element_count()));
  const auto out_last = static_cast<std::size_t>(result.dims().empty() ? 1 : result.dims().back());
  const auto in_last = static_cast<std::size_t>(dims.empty() ? 1 : dims.back());
  const std::size_t lines = out_last == 0 ? 0 : values.size() / out_last;
  if (attrs.fft_type == FftType::kIrfft) {
    std::vector<WideComplex> full(values.size());
    for (std::size_t l = 0; l < lines; ++l)
      for (std::size_t k = 0; k < out_last; ++k)
        full[l * out_last + k] = k < in_last ? data[l * in_last + k]
                                             : std::conj(data[l * in_last + (out_last - k)]);
    std::vector<std::int64_t> full_dims(result.dims().begin(), result.dims().end());
    dft_along(full, full_dims, rank - 1, /*inverse=*/true);
    values = std::move(full);
  } else {
    for (std::size_t l = 0; l < lines; ++l)
      for (std::size_t k = 0; k < out_last; ++k) values[l * out_last + k] = data[l * in_last + k];
  }

  Literal out(result);
  visit_dtype(result.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      auto dst = out.data<T>();
      for (std::size_t i = 0; i < values.size(); ++i)
        dst[i] = T(static_cast<R>(values[i].real()), static_cast<R>(values[i].imag()));
    } else if constexpr (std::is_floating_point_v<T>) {
      auto dst = out.data<T>();
      for (std::size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<T>(values[i].real());
    }
  });
  return out;
}

}  // namespace pjrt_lite::reference::detail
