#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// fft on the CPU. Each transformed dimension gets a plan at compile time: an iterative radix-2
// transform when its length is a power of two, Bluestein's chirp-z transform (a circular
// convolution computed by radix-2 transforms of the next power of two >= 2n - 1) otherwise.
// Every type computes in complex<double> and rounds once to the result type, so f32 results
// are the exact transform rounded (as the corpus's 3-ULP checks need), not float's error
// accumulated over log n stages. The working array and each worker's line buffers are kernel
// scratch: a run allocates nothing.

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numbers>
#include <type_traits>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A forward DFT of one length, X[k] = sum_j x[j] e^(-2 pi i jk / n), planned once.
class FftPlan {
 public:
  using C = std::complex<double>;

  explicit FftPlan(std::int64_t n) : n_(n) {
    if (n <= 1) return;
    if ((n & (n - 1)) == 0) {
      size_ = n;
      plan_radix2(size_);
      return;
    }
    // Bluestein: jk = (j^2 + k^2 - (k - j)^2) / 2 turns the DFT into chirp[k] times the
    // circular convolution of (x chirp) with conj(chirp), of length m >= 2n - 1.
    size_ = 1;
    while (size_ < 2 * n - 1) size_ *= 2;
    plan_radix2(size_);
    chirp_.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle small, so it is exact to double's precision for any k.
      const auto k2 = static_cast<double>((k * k) % (2 * n));
      chirp_[static_cast<std::size_t>(k)] =
          std::polar(1.0, -std::numbers::pi * k2 / static_cast<double>(n));
    }
    filter_.assign(static_cast<std::size_t>(size_), C(0));
    filter_[0] = std::conj(chirp_[0]);
    for (std::int64_t k = 1; k < n; ++k) {
      filter_[static_cast<std::size_t>(k)] = std::conj(chirp_[static_cast<std::size_t>(k)]);
      filter_[static_cast<std::size_t>(size_ - k)] = std::conj(chirp_[static_cast<std::size_t>(k)]);
    }
    radix2(filter_.data());
  }

  [[nodiscard]] std::int64_t length() const { return n_; }
  /// Complex elements of work space that transform() needs besides the line itself.
  [[nodiscard]] std::int64_t work_elements() const { return chirp_.empty() ? 0 : size_; }

  /// Transforms `x` (length() elements) in place; `work` has work_elements() elements.
  /// `inverse` computes (1/n) sum_j x[j] e^(+2 pi i jk / n), as conj(DFT(conj(x))) / n.
  void transform(C* x, C* work, bool inverse) const {
    if (n_ <= 1) return;
    if (inverse)
      for (std::int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]);
    if (chirp_.empty()) {
      radix2(x);
    } else {
      for (std::int64_t k = 0; k < n_; ++k) work[k] = x[k] * chirp_[static_cast<std::size_t>(k)];
      std::fill(work + n_, work + size_, C(0));
      radix2(work);
      for (std::int64_t k = 0; k < size_; ++k) work[k] = std::conj(work[k] * filter_[static_cast<std::size_t>(k)]);
      radix2(work);  // conj(DFT(conj(y))) is size_ times the inverse DFT of y
      const double scale = 1.0 / static_cast<double>(size_);
      for (std::int64_t k = 0; k < n_; ++k)
        x[k] = std::conj(work[k]) * scale * chirp_[static_cast<std::size_t>(k)];
    }
    if (inverse) {
      const double scale = 1.0 / static_cast<double>(n_);
      for (std::int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]) * scale;
    }
  }

 private:
  void plan_radix2(std::int64_t m) {
    int bits = 0;
    while ((std::int64_t{1} << bits) < m) ++bits;
    reversed_.resize(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) {
      std::int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      reversed_[static_cast<std::size_t>(i)] = r;
    }
    twiddles_.resize(static_cast<std::size_t>(m / 2));
    for (std::int64_t k = 0; k < m / 2; ++k)
      twiddles_[static_cast<std::size_t>(k)] =
          std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m));
  }

  /// The forward DFT of size_ elements in place: bit-reversal, then log2(size_) butterfly stages.
  void radix2(C* a) const {
    const std::int64_t m = size_;
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t r = reversed_[static_cast<std::size_t>(i)];
      if (i < r) std::swap(a[i], a[r]);
    }
    for (std::int64_t len = 2; len <= m; len *= 2) {
      const std::int64_t half = len / 2, step = m / len;
      for (std::int64_t i = 0; i < m; i += len)
        for (std::int64_t j = 0; j < half; ++j) {
          const C v = a[i + j + half] * twiddles_[static_cast<std::size_t>(j * step)];
          a[i + j + half] = a[i + j] - v;
          a[i + j] += v;
        }
    }
  }

  std::int64_t n_;
  std::int64_t size_ = 0;  // the radix-2 size: n, or Bluestein's m
  std::vector<std::int64_t> reversed_;
  std::vector<C> twiddles_;
  std::vector<C> chirp_;   // Bluestein only: e^(-pi i k^2 / n)
  std::vector<C> filter_;  // Bluestein only: the DFT of conj(chirp), wrapped to length m
};

class FftKernel final : public Kernel {
 public:
  using C = std::complex<double>;

  /// Plans fft(operand) -> result with `a` (checked by shape inference); both arrays dense
  /// row-major. Lines are split over up to `max_workers` threads.
  FftKernel(const Shape& operand, const Shape& result, const FftAttrs& a, int max_workers,
            std::int32_t src_slot, std::int32_t dst_slot)
      : type_(a.fft_type), in_dtype_(operand.dtype()), out_dtype_(result.dtype()),
        src_slot_(src_slot), dst_slot_(dst_slot), workers_(std::max(max_workers, 1)) {
    // The working array has the full transform's dims: the operand's, with IRFFT's last
    // dimension widened to n.
    const Shape& full = type_ == FftType::kIrfft ? result : operand;
    dims_.assign(full.dims().begin(), full.dims().end());
    total_ = full.element_count();
    in_last_ = operand.rank() == 0 ? 1 : operand.dims().back();
    out_last_ = result.rank() == 0 ? 1 : result.dims().back();
    const std::size_t first = dims_.size() - a.fft_length.size();
    std::int64_t line_work = 0;
    for (std::size_t d = first; d < dims_.size(); ++d) {
      axes_.push_back(d);
      plans_.emplace_back(dims_[d]);
      line_work = std::max(line_work, dims_[d] + plans_.back().work_elements());
    }
    per_worker_ = (line_work * static_cast<std::int64_t>(sizeof(C)) + 63) / 64 * 64;
    work_bytes_ = (total_ * static_cast<std::int64_t>(sizeof(C)) + 63) / 64 * 64;
    scratch_bytes = work_bytes_ + per_worker_ * workers_;
    double log_sum = 0;
    for (const auto& p : plans_) log_sum += std::max<double>(1, static_cast<double>(p.work_elements() + p.length()));
    flops = 5.0 * static_cast<double>(total_) * log_sum;
    bytes_accessed = operand.byte_size() + result.byte_size();
  }

  void run(const RunContext& ctx) const override {
    if (total_ == 0) return;
    C* work = reinterpret_cast<C*>(ctx.scratch);
    load(ctx.slots[src_slot_], work);
    const bool inverse = type_ == FftType::kIfft || type_ == FftType::kIrfft;
    const std::size_t plain = type_ == FftType::kIrfft ? plans_.size() - 1 : plans_.size();
    for (std::size_t p = 0; p < plain; ++p) transform_axis(ctx, work, p, inverse);
    if (type_ == FftType::kIrfft) {
      // The upper half of each last-dimension line is the mirror image of the lower.
      const std::int64_t n = out_last_;
      for (std::int64_t l = 0; l < total_ / n; ++l)
        for (std::int64_t k = in_last_; k < n; ++k) work[l * n + k] = std::conj(work[l * n + (n - k)]);
      transform_axis(ctx, work, plans_.size() - 1, true);
    }
    store(work, ctx.slots[dst_slot_]);
  }

 private:
  /// Copies the operand into the working array; IRFFT's operand fills the first in_last_
  /// entries of each last-dimension line of length n.
  void load(const std::byte* src, C* work) const {
    visit_dtype(in_dtype_, [&]<class T>(std::type_identity<T>) {
      if constexpr (is_complex_v<T> || std::is_floating_point_v<T>) {
        const T* in = reinterpret_cast<const T*>(src);
        const std::int64_t lines = total_ / dims_.back();
        for (std::int64_t l = 0; l < lines; ++l)
          for (std::int64_t k = 0; k < in_last_; ++k) {
            const T v = in[l * in_last_ + k];
            if constexpr (is_complex_v<T>)
              work[l * dims_.back() + k] = C(static_cast<double>(v.real()), static_cast<double>(v.imag()));
            else
              work[l * dims_.back() + k] = C(static_cast<double>(v), 0.0);
          }
      }
    });
  }

  /// Rounds the working array to the result: RFFT keeps each line's first out_last_ entries,
  /// IRFFT the real parts.
  void store(const C* work, std::byte* dst) const {
    visit_dtype(out_dtype_, [&]<class T>(std::type_identity<T>) {
      if constexpr (is_complex_v<T> || std::is_floating_point_v<T>) {
        T* out = reinterpret_cast<T*>(dst);
        const std::int64_t lines = total_ / dims_.back();
        for (std::int64_t l = 0; l < lines; ++l)
          for (std::int64_t k = 0; k < out_last_; ++k) {
            const C v = work[l * dims_.back() + k];
            if constexpr (is_complex_v<T>) {
              using R = typename T::value_type;
              out[l * out_last_ + k] = T(static_cast<R>(v.real()), static_cast<R>(v.imag()));
            } else {
              out[l * out_last_ + k] = static_cast<T>(v.real());
            }
          }
      }
    });
  }

  /// Transforms every line along the p-th transformed dimension, lines split across workers.
  void transform_axis(const RunContext& ctx, C* work, std::size_t p, bool inverse) const {
    const FftPlan& plan = plans_[p];
    const std::int64_t n = plan.length();
    if (n <= 1) return;
    std::int64_t inner = 1;
    for (std::size_t d = axes_[p] + 1; d < dims_.size(); ++d) inner *= dims_[d];
    const std::int64_t lines = total_ / n;
    std::byte* worker_scratch = ctx.scratch + work_bytes_;
    auto body = [&](std::int64_t begin, std::int64_t end, int worker) {
      C* line = reinterpret_cast<C*>(worker_scratch + worker * per_worker_);
      C* scratch = line + n;
      for (std::int64_t t = begin; t < end; ++t) {
        C* base = work + (t / inner) * n * inner + t % inner;
        for (std::int64_t j = 0; j < n; ++j) line[j] = base[j * inner];
        plan.transform(line, scratch, inverse);
        for (std::int64_t j = 0; j < n; ++j) base[j * inner] = line[j];
      }
    };
    if (workers_ > 1 && lines * n >= 1 << 14) ctx.parallel(lines, std::max<std::int64_t>(1, 4096 / n), body);
    else body(0, lines, 0);
  }

  FftType type_;
  DType in_dtype_, out_dtype_;
  std::int32_t src_slot_, dst_slot_;
  int workers_;
  std::vector<std::int64_t> dims_;  // the working array's
  std::int64_t total_ = 0, in_last_ = 1, out_last_ = 1;
  std::vector<std::size_t> axes_;
  std::vector<FftPlan> plans_;
  std::int64_t per_worker_ = 0, work_bytes_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
