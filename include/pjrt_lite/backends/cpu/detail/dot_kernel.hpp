#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// dot_general on the CPU: operands are brought to [batch, M, K] and [batch, K, N] (a strided
// copy into scratch only when their layout is not already that), then each batch is one
// blocked product (gemm.hpp), its rows or columns split across the client's threads when the
// product is large. 8-bit
// integer operands with a 32-bit integer result (the compiler's 8-bit products) multiply in
// Int8Gemm instead.

#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/int8_gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class DotKernel final : public Kernel {
 public:
  /// Plans the product of `lhs` and `rhs` with `dims` on up to `workers` threads; the result
  /// is batch + lhs free + rhs free, row-major, of the operands' type, or of `result` when
  /// the operands are 8-bit integers and `result` a 32-bit integer type.
  DotKernel(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dims, int workers, std::int32_t lhs_slot,
            std::int32_t rhs_slot, std::int32_t dst_slot, DType result = DType::kInvalid)
      : dtype_(lhs.dtype()), lhs_slot_(lhs_slot), rhs_slot_(rhs_slot), dst_slot_(dst_slot) {
    int8_ = Int8Gemm::multiplies(lhs.dtype(), rhs.dtype(), result);
    lhs_signed_ = lhs.dtype() == DType::kS8;
    rhs_signed_ = rhs.dtype() == DType::kS8;
    std::vector<std::int64_t> lhs_order = dims.lhs_batching_dimensions;
    std::vector<std::int64_t> rhs_order = dims.rhs_batching_dimensions;
    for (std::int64_t d : dims.lhs_batching_dimensions) batch_ *= lhs.dim(d);
    for (std::int64_t d = 0; d < lhs.rank(); ++d)
      if (!contains(dims.lhs_batching_dimensions, d) && !contains(dims.lhs_contracting_dimensions, d)) {
        lhs_order.push_back(d);
        m_ *= lhs.dim(d);
      }
    for (std::int64_t d : dims.lhs_contracting_dimensions) {
      lhs_order.push_back(d);
      k_ *= lhs.dim(d);
    }
    for (std::int64_t d : dims.rhs_contracting_dimensions) rhs_order.push_back(d);
    for (std::int64_t d = 0; d < rhs.rank(); ++d)
      if (!contains(dims.rhs_batching_dimensions, d) && !contains(dims.rhs_contracting_dimensions, d)) {
        rhs_order.push_back(d);
        n_ *= rhs.dim(d);
      }
    const auto esize = static_cast<std::int64_t>(byte_size(dtype_));
    // f32 and f64 operands stored as the transpose of what the product wants ([batch, K, M]
    // for the left, [batch, N, K] for the right: the products of a backward pass) go to
    // Eigen's GEMM as transposed maps, which its packing reads at no extra cost, instead of
    // being copied first.
    const bool real = !int8_ && (dtype_ == DType::kF32 || dtype_ == DType::kF64);
    const std::size_t batch_rank = dims.lhs_batching_dimensions.size();
    lhs_transposed_ = real && swaps_two_blocks(lhs_order, batch_rank, lhs_order.size() - batch_rank - dims.lhs_contracting_dimensions.size());
    rhs_transposed_ = real && swaps_two_blocks(rhs_order, batch_rank, dims.rhs_contracting_dimensions.size());
    if (!lhs_transposed_) lhs_copy_ = permutation_copy(lhs, lhs_order, esize);
    if (!rhs_transposed_) rhs_copy_ = permutation_copy(rhs, rhs_order, esize);
    const std::int64_t wide = computes_wide(dtype_) ? 4 : esize;
    auto reserve = [this](std::int64_t bytes) {
      const std::int64_t at = scratch_bytes;
      scratch_bytes += (bytes + 63) / 64 * 64;
      return at;
    };
    if (lhs_copy_) lhs_scratch_ = reserve(batch_ * m_ * k_ * esize);
    if (rhs_copy_) rhs_scratch_ = reserve(batch_ * k_ * n_ * esize);
    if (int8_) {
      // Int8Gemm's packed blocks, one set per worker that can run a block of rows.
      int8_slice_ = Int8Gemm::scratch_bytes(n_, k_);
      int8_scratch_ = reserve(int8_slice_ * (splits() ? workers : 1));
      flops = 2.0 * static_cast<double>(batch_ * m_ * n_ * k_);
      bytes_accessed = batch_ * (m_ * k_ + k_ * n_ + 4 * m_ * n_);
      return;
    }
    if (computes_wide(dtype_)) {
      lhs_wide_ = reserve(batch_ * m_ * k_ * wide);
      rhs_wide_ = reserve(batch_ * k_ * n_ * wide);
      out_wide_ = reserve(batch_ * m_ * n_ * wide);
    }
    // Packing buffers for every worker that can run a block of rows (one when the product
    // is too small to split).
    if (dtype_ != DType::kPred)
      visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
        gemm_ = GemmScratch::plan<typename GemmComputeType<T>::type>(
            m_, n_, k_, splits() || splits_batches(workers) ? workers : 1, scratch_bytes,
            splits_float_columns(workers) ? kFloatColumnUnit : 0);
      });
    flops = 2.0 * static_cast<double>(batch_ * m_ * n_ * k_);
    bytes_accessed = (batch_ * (m_ * k_ + k_ * n_ + m_ * n_)) * esize;
  }

  bool adopt_epilogue(std::unique_ptr<FusedKernel>& loop) override {
    // The products that write their result in place by blocks of rows (not those computed
    // in a wider type and converted afterwards).
    if (!int8_ && (computes_wide(dtype_) || dtype_ == DType::kPred)) return false;
    epilogue_.adopt(loop, *this);
    return true;
  }

  void run(const RunContext& ctx) const override {
    epilogue_.bind(ctx);
    const std::byte* a = ctx.slots[lhs_slot_];
    const std::byte* b = ctx.slots[rhs_slot_];
    if (lhs_copy_) {
      lhs_copy_->run(ctx.scratch + lhs_scratch_, a);
      a = ctx.scratch + lhs_scratch_;
    }
    if (rhs_copy_) {
      rhs_copy_->run(ctx.scratch + rhs_scratch_, b);
      b = ctx.scratch + rhs_scratch_;
    }
    std::byte* c = ctx.slots[dst_slot_];
    if (int8_) {
      int8_product(ctx, reinterpret_cast<const std::uint8_t*>(a), reinterpret_cast<const std::uint8_t*>(b),
                   reinterpret_cast<std::int32_t*>(c));
      return;
    }
    if (computes_in_f32(dtype_)) {
      auto* aw = reinterpret_cast<float*>(ctx.scratch + lhs_wide_);
      auto* bw = reinterpret_cast<float*>(ctx.scratch + rhs_wide_);
      auto* cw = reinterpret_cast<float*>(ctx.scratch + out_wide_);
      convert_elements(a, dtype_, aw, DType::kF32, batch_ * m_ * k_);
      convert_elements(b, dtype_, bw, DType::kF32, batch_ * k_ * n_);
      gemm<float>(ctx, aw, bw, cw);
      convert_elements(cw, DType::kF32, c, dtype_, batch_ * m_ * n_);
      return;
    }
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      } else if constexpr (is_int_v<T> && sizeof(T) < sizeof(unsigned)) {
        // 8- and 16-bit products promote to (signed) int, where they can overflow: the
        // product runs on the operands' bits in 32-bit unsigned arithmetic, whose low bits
        // are the wrapped result.
        using U = std::make_unsigned_t<T>;
        auto* aw = reinterpret_cast<unsigned*>(ctx.scratch + lhs_wide_);
        auto* bw = reinterpret_cast<unsigned*>(ctx.scratch + rhs_wide_);
        auto* cw = reinterpret_cast<unsigned*>(ctx.scratch + out_wide_);
        widen<U>(a, aw, batch_ * m_ * k_);
        widen<U>(b, bw, batch_ * k_ * n_);
        gemm<unsigned>(ctx, aw, bw, cw);
        for (std::int64_t i = 0; i < batch_ * m_ * n_; ++i) {
          const auto narrow = static_cast<U>(cw[i]);
          std::memcpy(c + i * static_cast<std::int64_t>(sizeof(U)), &narrow, sizeof(U));
        }
      } else if constexpr (std::is_same_v<T, bool>) {
        bool_product(reinterpret_cast<const bool*>(a), reinterpret_cast<const bool*>(b), reinterpret_cast<bool*>(c));
      } else if constexpr (is_int_v<T>) {
        // Unsigned arithmetic wraps without undefined behaviour and gives the same bits.
        using U = std::make_unsigned_t<T>;
        gemm<U>(ctx, reinterpret_cast<const U*>(a), reinterpret_cast<const U*>(b), reinterpret_cast<U*>(c));
      } else {
        gemm<T>(ctx, reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b), reinterpret_cast<T*>(c));
      }
    });
  }

 private:
  /// Types whose product runs in a 32-bit type: f16 and bf16 in f32, 8- and 16-bit integers
  /// in unsigned.
  static bool computes_wide(DType t) {
    return computes_in_f32(t) || t == DType::kS8 || t == DType::kU8 || t == DType::kS16 || t == DType::kU16;
  }
  /// The n elements at `from` (unsigned U bits) zero-extended to unsigned.
  template <class U>
  static void widen(const std::byte* from, unsigned* to, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      U v;
      std::memcpy(&v, from + i * static_cast<std::int64_t>(sizeof(U)), sizeof(U));
      to[i] = v;
    }
  }

  /// True when `order` is [0, batch) followed by two blocks A and B (A of `first` entries)
  /// that each list consecutive dimensions and that memory holds as [batch, B, A]: viewing
  /// the operand as [batch, A, B] is then a transpose of each batch's matrix. Identity
  /// orders are not swaps.
  static bool swaps_two_blocks(const std::vector<std::int64_t>& order, std::size_t batch, std::size_t first) {
    const std::size_t rank = order.size();
    if (first == 0 || batch + first >= rank) return false;
    for (std::size_t i = 0; i < batch; ++i)
      if (order[i] != static_cast<std::int64_t>(i)) return false;
    const std::size_t second = rank - batch - first;
    for (std::size_t i = 0; i < first; ++i)  // A sits after B in memory
      if (order[batch + i] != static_cast<std::int64_t>(batch + second + i)) return false;
    for (std::size_t i = 0; i < second; ++i)
      if (order[batch + first + i] != static_cast<std::int64_t>(batch + i)) return false;
    return true;
  }

  static bool contains(const std::vector<std::int64_t>& v, std::int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  }

  /// A copy into dense [order...] layout, or nothing when `order` is already the identity.
  static std::optional<StridedCopy> permutation_copy(const Shape& s, const std::vector<std::int64_t>& order,
                                                     std::int64_t esize) {
    bool identity = true;
    for (std::size_t i = 0; i < order.size(); ++i) identity &= order[i] == static_cast<std::int64_t>(i);
    if (identity) return std::nullopt;
    return StridedCopy::permuting(s.dims(), order, esize);
  }

  template <class T>
  void gemm(const RunContext& ctx, const T* a, const T* b, T* c) const {
    if (splits_batches(ctx.max_workers)) {
      // Whole products to the workers, each on one as on a single thread (the same bits):
      // one hand-off for the batch instead of one per product, and no operand packed twice.
      auto products = [&](std::int64_t b0, std::int64_t b1, int worker) {
        for (std::int64_t batch = b0; batch < b1; ++batch) product_rows<T>(ctx, a, b, c, batch, 0, m_, worker);
      };
      ctx.parallel(batch_, 1, products);
      return;
    }
    for (std::int64_t batch = 0; batch < batch_; ++batch) {
      if constexpr (std::is_floating_point_v<T>) {
        if (splits_float_columns(ctx.max_workers)) {
          const T* ab = a + batch * m_ * k_;
          const T* bb = b + batch * k_ * n_;
          T* cb = c + batch * m_ * n_;
          // Each worker takes whole units of columns and packs only its share of B (a split
          // of rows packs all of B on every worker, as costly as the product when the rows
          // are few); the epilogue then runs on the worker's columns of each row.
          const std::int64_t units = (n_ + kFloatColumnUnit - 1) / kFloatColumnUnit;
          auto columns = [&](std::int64_t u0, std::int64_t u1, int worker) {
            const std::int64_t j0 = u0 * kFloatColumnUnit, j1 = std::min(n_, u1 * kFloatColumnUnit);
            std::byte* scratch = gemm_.slice(ctx.scratch, worker);
            const T* rhs = rhs_transposed_ ? bb + j0 * k_ : bb + j0;
            auto with_lhs = [&]<bool kRhsColumns>(std::int64_t ldb) {
              if (lhs_transposed_)
                gemm_into<T, true, kRhsColumns>(m_, j1 - j0, k_, ab, m_, rhs, ldb, cb + j0, n_, gemm_, scratch);
              else
                gemm_into<T, false, kRhsColumns>(m_, j1 - j0, k_, ab, k_, rhs, ldb, cb + j0, n_, gemm_, scratch);
            };
            if (rhs_transposed_) with_lhs.template operator()<true>(k_);
            else with_lhs.template operator()<false>(n_);
            for (std::int64_t r = 0; r < m_; ++r)
              epilogue_.run(ctx, (batch * m_ + r) * n_ + j0, (batch * m_ + r) * n_ + j1, worker);
          };
          ctx.parallel(units, (units + ctx.max_workers - 1) / ctx.max_workers, columns);
          continue;
        }
      }
      auto rows = [&](std::int64_t r0, std::int64_t r1, int worker) { product_rows<T>(ctx, a, b, c, batch, r0, r1, worker); };
      split_rows(ctx, rows);
    }
  }

  /// Rows [r0, r1) of product `batch`, and the epilogue on them, on `worker`. f32/f64
  /// operands stored transposed are read in place as column-major views ([batch, K, M] on
  /// the left, [batch, N, K] on the right).
  template <class T>
  void product_rows(const RunContext& ctx, const T* a, const T* b, T* c, std::int64_t batch, std::int64_t r0,
                    std::int64_t r1, int worker) const {
    const T* ab = a + batch * m_ * k_;
    const T* bb = b + batch * k_ * n_;
    T* cb = c + batch * m_ * n_;
    std::byte* scratch = gemm_.slice(ctx.scratch, worker);
    auto with_rhs = [&]<bool kLhsColumns>(const T* lhs, std::int64_t lda) {
      if constexpr (std::is_floating_point_v<T>) {
        if (rhs_transposed_)
          return gemm_into<T, kLhsColumns, true>(r1 - r0, n_, k_, lhs, lda, bb, k_, cb + r0 * n_, n_, gemm_, scratch);
      }
      gemm_into<T, kLhsColumns, false>(r1 - r0, n_, k_, lhs, lda, bb, n_, cb + r0 * n_, n_, gemm_, scratch);
    };
    if constexpr (std::is_floating_point_v<T>) {
      if (lhs_transposed_) with_rhs.template operator()<true>(ab + r0, m_);
      else with_rhs.template operator()<false>(ab + r0 * k_, k_);
    } else {
      with_rhs.template operator()<false>(ab + r0 * k_, k_);
    }
    epilogue_.run(ctx, (batch * m_ + r0) * n_, (batch * m_ + r1) * n_, worker);
  }

  /// Runs rows(r0, r1, worker) over [0, m_). One block of rows per worker: each block packs
  /// all of B again, and the pool's threads poll before they sleep, so they start close
  /// together (finer blocks were slower; the figures are in docs/DECISIONS.md, "GEMM splits
  /// rows"). Blocks start on a multiple of kRowUnit rows and the last takes the remainder, so
  /// each row meets the same micro-kernel path (Eigen's register blocks of rows, its one-row
  /// remainder) as on one thread: the bits never depend on the split.
  template <class Rows>
  void split_rows(const RunContext& ctx, Rows& rows) const {
    if (!splits()) return rows(0, m_, 0);
    const std::int64_t units = m_ / kRowUnit;
    auto unit_rows = [&](std::int64_t u0, std::int64_t u1, int worker) {
      rows(u0 * kRowUnit, u1 == units ? m_ : u1 * kRowUnit, worker);
    };
    ctx.parallel(units, (units + ctx.max_workers - 1) / ctx.max_workers, unit_rows);
  }

  /// c = a * b for 8-bit operands laid out [batch, M, K] and [batch, K, N].
  void int8_product(const RunContext& ctx, const std::uint8_t* a, const std::uint8_t* b, std::int32_t* c) const {
    for (std::int64_t batch = 0; batch < batch_; ++batch) {
      const std::uint8_t* ab = a + batch * m_ * k_;
      const std::uint8_t* bb = b + batch * k_ * n_;
      std::int32_t* cb = c + batch * m_ * n_;
      if (splits_int8_columns(ctx)) {
        // Each worker takes whole 32-column tiles and packs only its share of B: a split of
        // the rows packs all of B on every worker, as costly as the product when the rows are
        // few.
        const std::int64_t units = (n_ + kInt8ColumnUnit - 1) / kInt8ColumnUnit;
        auto columns = [&](std::int64_t u0, std::int64_t u1, int worker) {
          const std::int64_t j0 = u0 * kInt8ColumnUnit, j1 = std::min(n_, u1 * kInt8ColumnUnit);
          std::byte* scratch = ctx.scratch + int8_scratch_ + int8_slice_ * worker;
          Epilogue::OnRows on_rows(epilogue_, ctx, batch * m_ * n_, n_, worker, j0, j1);
          Int8Gemm::with_signedness(lhs_signed_, rhs_signed_, [&]<bool kSignedA, bool kSignedB>() {
            Int8Gemm::run<kSignedA, kSignedB>(m_, j1 - j0, k_, ab, k_, bb + j0, n_, cb + j0, n_, scratch, on_rows.done());
          });
        };
        ctx.parallel(units, (units + ctx.max_workers - 1) / ctx.max_workers, columns);
        continue;
      }
      auto rows = [&](std::int64_t r0, std::int64_t r1, int worker) {
        std::byte* scratch = ctx.scratch + int8_scratch_ + int8_slice_ * worker;
        // The epilogue runs on each block of rows Int8Gemm finishes, while it is in cache.
        Epilogue::OnRows on_rows(epilogue_, ctx, (batch * m_ + r0) * n_, n_, worker);
        Int8Gemm::with_signedness(lhs_signed_, rhs_signed_, [&]<bool kSignedA, bool kSignedB>() {
          Int8Gemm::run<kSignedA, kSignedB>(r1 - r0, n_, k_, ab + r0 * k_, k_, bb, n_, cb + r0 * n_, n_, scratch,
                                            on_rows.done());
        });
      };
      split_rows(ctx, rows);
    }
  }

  /// Rows split across workers in multiples of this: a multiple of the row count of every
  /// register block Eigen's kernels use.
  static constexpr std::int64_t kRowUnit = 8;
  /// An 8-bit product's columns split across workers in multiples of this: Int8Gemm's widest
  /// register tile.
  static constexpr std::int64_t kInt8ColumnUnit = 32;

  /// An f32/f64 product's columns split across workers in multiples of this: a multiple of
  /// PanelGemm's panel width at every vector width (two packets of 4, 8 or 16 floats, 2, 4 or
  /// 8 doubles), so each worker's columns start on a whole panel. (The bits never depend on
  /// the split: each element sums its depth in the same order in any block of columns.)
  static constexpr std::int64_t kFloatColumnUnit = 64;

  /// Whether an f32/f64 product splits its columns rather than its rows: a split one with at
  /// least as many columns as rows and at least two units of them. PanelGemm reads A in place
  /// and packs B, so splitting columns packs each column of B once, where splitting rows packs
  /// all of B on every worker.
  [[nodiscard]] bool splits_float_columns(int workers) const {
    return (dtype_ == DType::kF32 || dtype_ == DType::kF64) && !int8_ && splits() && workers > 1 && n_ >= m_ &&
           n_ >= 2 * kFloatColumnUnit;
  }

  /// Whether an 8-bit product splits its columns rather than its rows: a split one with more
  /// columns than rows and at least two tiles of them.
  [[nodiscard]] bool splits_int8_columns(const RunContext& ctx) const {
    return splits() && ctx.max_workers > 1 && n_ > m_ && n_ >= 2 * kInt8ColumnUnit;
  }

  /// Whether the batch's products go to the workers whole, each on one worker: a batch of at
  /// least as many products as workers, in equal shares or at least four per worker, and
  /// together as large as a product that splits. Attention's per-head products ([4, 128,
  /// 128] and [4, 128, 64] for 4 heads of 128 tokens) then take one hand-off instead of one
  /// per head, each head's operands packed once.
  [[nodiscard]] bool splits_batches(int workers) const {
    return !int8_ && workers > 1 && batch_ >= workers && (batch_ % workers == 0 || batch_ >= 4 * workers) &&
           static_cast<double>(batch_) * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_) >=
               1 << 18;
  }

  /// Whether each product's rows split across the workers.
  [[nodiscard]] bool splits() const {
    return static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_) >= 1 << 18 &&
           m_ >= 2 * kRowUnit;
  }

  void bool_product(const bool* a, const bool* b, bool* c) const {
    for (std::int64_t batch = 0; batch < batch_; ++batch)
      for (std::int64_t i = 0; i < m_; ++i)
        for (std::int64_t j = 0; j < n_; ++j) {
          bool acc = false;
          for (std::int64_t k = 0; k < k_ && !acc; ++k)
            acc = a[(batch * m_ + i) * k_ + k] && b[(batch * k_ + k) * n_ + j];
          c[(batch * m_ + i) * n_ + j] = acc;
        }
  }

  DType dtype_;
  std::int32_t lhs_slot_, rhs_slot_, dst_slot_;
  std::int64_t batch_ = 1, m_ = 1, k_ = 1, n_ = 1;
  std::optional<StridedCopy> lhs_copy_, rhs_copy_;
  bool lhs_transposed_ = false, rhs_transposed_ = false;  // f32/f64 only: read in place, transposed
  std::int64_t lhs_scratch_ = 0, rhs_scratch_ = 0, lhs_wide_ = 0, rhs_wide_ = 0, out_wide_ = 0;
  bool int8_ = false, lhs_signed_ = false, rhs_signed_ = false;  // 8-bit operands, 32-bit sums
  std::int64_t int8_scratch_ = 0, int8_slice_ = 0;
  GemmScratch gemm_;  // the products' packing buffers, one slice per worker
  Epilogue epilogue_;
};

}  // namespace pjrt_lite::cpu::detail
