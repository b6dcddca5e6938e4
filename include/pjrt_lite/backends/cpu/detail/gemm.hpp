#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The blocked products of dot_general and convolution, on packing buffers in kernel scratch.
// An Eigen product expression packs its operands into buffers that it puts on the stack up to
// 128 KiB and takes from the heap beyond (every product of a model layer's size). Here real
// floating-point products run on PanelGemm (packed_gemm.hpp) and the others (integers,
// complex) on Eigen's blocked product (general_matrix_matrix_product, with the blocking sizes
// Eigen's expression would choose), both on buffers planned at compile time, one set per
// worker, so a steady-state execute allocates nothing. Shapes too small to pack (a
// coefficient-wise product for tiny sizes, a matrix-vector product for one row or column)
// keep Eigen's expression.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/packed_gemm.hpp"
#include "pjrt_lite/core/dtype.hpp"

// The planned path reaches into Eigen's internals (level3_blocking's members, the blocking
// heuristic, general_matrix_matrix_product::run) as Eigen 3.4 has them; with another Eigen
// every product takes the expression path, correct but allocating.
#if EIGEN_VERSION_AT_LEAST(3, 4, 0) && !EIGEN_VERSION_AT_LEAST(3, 4, 90)
#define PJRT_LITE_PLANNED_GEMM 1
#else
#define PJRT_LITE_PLANNED_GEMM 0
#endif

namespace pjrt_lite::inline v0_1::cpu::detail {

/// The type a product of T elements computes in: f16 and bf16 in f32 (rounded once at the
/// end), integers in unsigned arithmetic of at least 32 bits (whose low bits are the wrapped
/// result), pred as a count of true products.
template <class T>
struct GemmComputeType {
  using type = T;
};
template <>
struct GemmComputeType<f16> {
  using type = float;
};
template <>
struct GemmComputeType<bf16> {
  using type = float;
};
template <>
struct GemmComputeType<bool> {
  using type = unsigned;
};
template <class T>
  requires is_int_v<T>
struct GemmComputeType<T> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};

/// Eigen's cache blocking of one product.
struct GemmBlocking {
  std::int64_t kc = 0, mc = 0, nc = 0;
};

/// The blocking Eigen's product expression chooses for a row-major [rows x cols] result of
/// depth `depth`. Eigen computes a row-major result as its column-major transpose, so its m
/// is `cols` and its n is `rows`.
template <class C>
GemmBlocking gemm_blocking(std::int64_t rows, std::int64_t cols, std::int64_t depth) {
  Eigen::Index kc = depth, mc = cols, nc = rows;
#if PJRT_LITE_PLANNED_GEMM
  Eigen::internal::computeProductBlockingSizes<C, C, 1>(kc, mc, nc, Eigen::Index{1});
#endif
  return {kc, mc, nc};
}

/// Whether products of C run on PanelGemm (real floating-point numbers the translation unit
/// vectorizes) rather than Eigen's blocked product.
template <class C>
inline constexpr bool kPanelGemm = std::is_floating_point_v<C> && Lanes<C>::kSize > 1;

/// Whether a product of this shape runs blocked on packing buffers: the shapes for which
/// Eigen's expression would run its blocked product, where PanelGemm or this Eigen can run it
/// on planned buffers (the others do not allocate).
template <class C>
bool gemm_packs(std::int64_t rows, std::int64_t cols, std::int64_t depth) {
  return (kPanelGemm<C> || PJRT_LITE_PLANNED_GEMM) && rows > 1 && cols > 1 && depth > 0 &&
         rows + cols + depth >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD;
}

#if PJRT_LITE_PLANNED_GEMM
/// A level3_blocking of sizes `b` whose buffers are the caller's.
template <class C>
class ScratchBlocking final : public Eigen::internal::level3_blocking<C, C> {
 public:
  ScratchBlocking(const GemmBlocking& b, C* block_a, C* block_b) {
    this->m_kc = b.kc;
    this->m_mc = b.mc;
    this->m_nc = b.nc;
    this->m_blockA = block_a;
    this->m_blockB = block_b;
  }
};
#endif

/// The packing scratch of every worker: `workers` slices of `slice_bytes`, each starting on a
/// 64-byte boundary. For PanelGemm a slice is its scratch for the widest product; for Eigen's
/// product it is the packed left block then the packed right block (the packed-panel loads of
/// Eigen's kernels are aligned loads), sized for every product of up to `max_rows` rows:
/// Eigen's blocking is not monotone in the row count (a shorter product may take a wider
/// block), but its depth block kc depends on the depth alone, it packs kc x min(mc, cols)
/// elements on the left and kc x min(nc, rows) on the right, and nc never exceeds what it
/// chooses for an unbounded row count.
struct GemmScratch {
  std::int64_t a_elements = 0, b_elements = 0;  // the capacity of each block (PanelGemm: a only)
  std::int64_t offset = 0;                      // bytes into the kernel's scratch
  std::int64_t a_bytes = 0;                     // the left block's share of a slice
  std::int64_t slice_bytes = 0;                 // per worker; 0 when the product never packs
  int workers = 0;

  /// With `column_unit` > 0 the product may also run as blocks of its columns, each a
  /// multiple of `column_unit` wide but the last: the blocks are sized for every such width.
  template <class C>
  static GemmScratch plan(std::int64_t max_rows, std::int64_t cols, std::int64_t depth, int workers,
                          std::int64_t& scratch_bytes, std::int64_t column_unit = 0) {
    GemmScratch s;
    if (!gemm_packs<C>(max_rows, cols, depth)) return s;
    if constexpr (kPanelGemm<C>) {
      s.a_elements = PanelGemm<C>::scratch_elements(cols, depth);  // the most any narrower block takes
    } else {
      auto fit = [&](std::int64_t width) {
        const GemmBlocking at_most = gemm_blocking<C>(max_rows, width, depth);
        const GemmBlocking unbounded = gemm_blocking<C>(std::int64_t{1} << 40, width, depth);
        s.a_elements = std::max(s.a_elements, at_most.kc * width);
        s.b_elements =
            std::max(s.b_elements, at_most.kc * std::max(at_most.nc, std::min(max_rows, unbounded.nc)));
      };
      fit(cols);
      for (std::int64_t w = column_unit; column_unit > 0 && w < cols; w += column_unit) {
        fit(w);         // a block of whole units
        fit(cols - w);  // the last block, from a unit's start to the end
      }
    }
    const auto size = static_cast<std::int64_t>(sizeof(C));
    s.a_bytes = (s.a_elements * size + 63) / 64 * 64;
    s.slice_bytes = s.a_bytes + (s.b_elements * size + 63) / 64 * 64;
    s.offset = scratch_bytes;
    s.workers = std::max(workers, 1);
    scratch_bytes += s.slice_bytes * s.workers;
    return s;
  }
  /// Worker `w`'s slice of the kernel scratch at `scratch`, or null when nothing was planned
  /// for it.
  [[nodiscard]] std::byte* slice(std::byte* scratch, int w) const {
    return slice_bytes > 0 && w >= 0 && w < workers ? scratch + offset + slice_bytes * w : nullptr;
  }
  /// Whether a product of this shape packs, and in a slice of this plan.
  template <class C>
  [[nodiscard]] bool fits(std::int64_t rows, std::int64_t cols, std::int64_t depth) const {
    if (slice_bytes == 0 || !gemm_packs<C>(rows, cols, depth)) return false;
    if constexpr (kPanelGemm<C>) {
      return PanelGemm<C>::scratch_elements(cols, depth) <= a_elements;
    } else {
      const GemmBlocking need = gemm_blocking<C>(rows, cols, depth);
      return need.kc * std::min(need.mc, cols) <= a_elements && need.kc * std::min(need.nc, rows) <= b_elements;
    }
  }
};

/// c = op(a) * op(b), all row-major views: c is [rows x cols] with row stride ldc; op(a) is
/// [rows x depth], stored row-major with stride lda, or (kLhsColumns) column-major with
/// stride lda; op(b) is [depth x cols] likewise. With `plan` made for at least these rows and
/// `worker_scratch` the calling worker's slice of it, the product packs there (PanelGemm, or
/// Eigen's blocked product); otherwise, or when the shape's blocking would not fit, Eigen's
/// expression runs it.
template <class C, bool kLhsColumns = false, bool kRhsColumns = false>
void gemm_into(std::int64_t rows, std::int64_t cols, std::int64_t depth, const C* a, std::int64_t lda, const C* b,
               std::int64_t ldb, C* c, std::int64_t ldc, const GemmScratch& plan, std::byte* worker_scratch) {
  using Stride = Eigen::OuterStride<>;
  using RowMajor = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using LhsMatrix = std::conditional_t<kLhsColumns, ColMajor, RowMajor>;
  using RhsMatrix = std::conditional_t<kRhsColumns, ColMajor, RowMajor>;
  Eigen::Map<RowMajor, Eigen::Unaligned, Stride> out(c, rows, cols, Stride(ldc));
  if (rows == 0 || cols == 0) return;
  if (depth == 0) {
    out.setZero();
    return;
  }
  if (worker_scratch != nullptr && plan.fits<C>(rows, cols, depth)) {
    if constexpr (kPanelGemm<C>) {
      return PanelGemm<C>::template run<kLhsColumns, kRhsColumns>(rows, cols, depth, a, lda, b, ldb, c, ldc,
                                                                   reinterpret_cast<C*>(worker_scratch));
    } else {
#if PJRT_LITE_PLANNED_GEMM
      ScratchBlocking<C> blocking(gemm_blocking<C>(rows, cols, depth), reinterpret_cast<C*>(worker_scratch),
                                  reinterpret_cast<C*>(worker_scratch + plan.a_bytes));
      out.setZero();
      Eigen::internal::general_matrix_matrix_product<
          Eigen::Index, C, kLhsColumns ? Eigen::ColMajor : Eigen::RowMajor, false, C,
          kRhsColumns ? Eigen::ColMajor : Eigen::RowMajor, false, Eigen::RowMajor, 1>::run(rows, cols, depth, a, lda,
                                                                                             b, ldb, c, 1, ldc, C(1),
                                                                                             blocking, nullptr);
      return;
#endif
    }
  }
  out.noalias() = Eigen::Map<const LhsMatrix, Eigen::Unaligned, Stride>(a, rows, depth, Stride(lda)) *
                  Eigen::Map<const RhsMatrix, Eigen::Unaligned, Stride>(b, depth, cols, Stride(ldb));
}

}  // namespace pjrt_lite::cpu::detail
