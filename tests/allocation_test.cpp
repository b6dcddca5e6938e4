// Tests of the promise in ARCHITECTURE.md that a steady-state execute makes no heap
// allocation and takes no lock. This file interposes the C library's allocator (malloc,
// calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc, pvalloc, free) and
// replaces the global operator new and delete (which forward to it), so every allocation of
// the process is seen: the library's own, the standard library's and Eigen's (whose GEMM
// packing buffers come from malloc). It also replaces pthread_mutex_lock (which std::mutex
// calls). Each counts while a scope asks it to, and the control loops below (execute, read the
// result back, drop it) must count zero. Inside a scope Eigen's own check is armed too
// (EIGEN_RUNTIME_NO_MALLOC, set for every translation unit of the test binaries, and
// set_is_malloc_allowed(false)), which asserts where Eigen would allocate in builds with
// assertions. The counting is off outside those scopes, so the rest of the suite, which
// shares this binary, is unaffected. Sanitizers intercept the allocator and pthread_mutex_lock
// themselves: under them only operator new and delete are counted.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

#if !defined(EIGEN_RUNTIME_NO_MALLOC)
#error "the test binaries are built with EIGEN_RUNTIME_NO_MALLOC (tests/CMakeLists.txt)"
#endif

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

// Sanitizers interpose the allocator and pthread_mutex_lock themselves.
#define PJRT_LITE_INTERPOSE (!PJRT_LITE_TEST_ASAN && !PJRT_LITE_TEST_TSAN)
// ThreadSanitizer's runtime defines operator new and delete itself (strongly: a second
// definition does not link), so under it nothing is counted and the count checks are left
// out; the programs still run, and their results are still checked.
#define PJRT_LITE_REPLACE_NEW (!PJRT_LITE_TEST_TSAN)
/// A check of a count, made where allocations are counted.
#define CHECK_COUNT(cond, ...)                                              \
  do {                                                                      \
    if constexpr (PJRT_LITE_REPLACE_NEW) {                                  \
      CHECK_MESSAGE(cond, "counted" __VA_OPT__(, ) __VA_ARGS__);            \
    }                                                                       \
  } while (0)

namespace {

// Plain constant-initialised thread_locals: reading them from malloc needs no dynamic TLS
// initialisation, which could itself allocate.
thread_local bool t_counting = false;
thread_local std::int64_t t_allocations = 0;
thread_local std::int64_t t_deallocations = 0;
// The same for every thread of the process (the pool's workers run parallel chunks).
std::atomic<bool> g_counting{false};
std::atomic<std::int64_t> g_allocations{0};
std::atomic<std::int64_t> g_locks{0};  // mutex locks on every thread, while counting

/// Called for every allocation made while counting: a debugger's breakpoint here
/// (`break pjrt_lite_counted_allocation`) shows who allocated.
[[gnu::noinline]] void pjrt_lite_counted_allocation(std::size_t size) { asm volatile("" : : "r"(size)); }

void note_allocation(std::size_t size) {
  const bool here = t_counting;
  if (here) ++t_allocations;
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    pjrt_lite_counted_allocation(size);
  } else if (here) {
    pjrt_lite_counted_allocation(size);
  }
}

void note_free(void* p) {
  if (p != nullptr && t_counting) ++t_deallocations;
}

}  // namespace

#if PJRT_LITE_INTERPOSE
// glibc's allocator under its internal names: the definitions below replace the public ones
// for the whole process (the executable's symbols come first), count, and forward.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) noexcept {
  note_allocation(n);
  return __libc_malloc(n);
}
void* calloc(std::size_t count, std::size_t n) noexcept {
  note_allocation(count * n);
  return __libc_calloc(count, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  note_allocation(n);
  return __libc_realloc(p, n);
}
void free(void* p) noexcept {
  note_free(p);
  __libc_free(p);
}
void* memalign(std::size_t alignment, std::size_t n) noexcept {
  note_allocation(n);
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept {
  note_allocation(n);
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) noexcept {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  note_allocation(n);
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(std::size_t n) noexcept {
  note_allocation(n);
  return __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), n);
}
void* pvalloc(std::size_t n) noexcept {
  note_allocation(n);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return __libc_memalign(page, (n + page - 1) / page * page);
}
}  // extern "C"
#endif

namespace {

// operator new forwards to the C allocator: with the allocator interposed, it is counted
// there; under a sanitizer, here.
void* counted_allocate(std::size_t size, std::size_t alignment, bool nothrow) {
  if constexpr (!PJRT_LITE_INTERPOSE) note_allocation(size);
  if (size == 0) size = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr && !nothrow) {
#if defined(__cpp_exceptions)
    throw std::bad_alloc();
#else
    std::abort();
#endif
  }
  return p;
}

void counted_free(void* p) noexcept {
  if constexpr (!PJRT_LITE_INTERPOSE) note_free(p);
  std::free(p);
}

}  // namespace

#if PJRT_LITE_INTERPOSE
// Counts, then forwards to the C library's (found once, by name, after this definition).
extern "C" int pthread_mutex_lock(pthread_mutex_t* mutex) {
  using Lock = int (*)(pthread_mutex_t*);
  static const auto real = reinterpret_cast<Lock>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  if (g_counting.load(std::memory_order_relaxed)) g_locks.fetch_add(1, std::memory_order_relaxed);
  return real(mutex);
}
#endif

#if PJRT_LITE_REPLACE_NEW
// Every replaceable form, so that no allocation slips past the count: plain, array, nothrow
// and over-aligned (buffer memory is allocated with std::align_val_t).
void* operator new(std::size_t n) { return counted_allocate(n, 0, false); }
void* operator new[](std::size_t n) { return counted_allocate(n, 0, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_allocate(n, 0, true);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_allocate(n, 0, true);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocate(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocate(n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}
#endif

namespace {

/// What a counting scope saw.
struct Counts {
  std::int64_t allocations = 0;    // on the thread that opened the scope
  std::int64_t deallocations = 0;  // on that thread
  std::int64_t any_thread = 0;     // allocations on every thread of the process
  std::int64_t locks = 0;          // mutex locks on every thread (when PJRT_LITE_INTERPOSE)
};

/// Counts heap allocations from construction to stop(). Not nestable.
class CountingScope {
 public:
  CountingScope() {
    t_allocations = t_deallocations = 0;
    g_allocations.store(0);
    g_locks.store(0);
    g_counting.store(true);
    t_counting = true;
    Eigen::internal::set_is_malloc_allowed(false);
  }
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;
  ~CountingScope() { stop(); }

  Counts stop() {
    Eigen::internal::set_is_malloc_allowed(true);
    t_counting = false;
    g_counting.store(false);
    return {t_allocations, t_deallocations, g_allocations.load(), g_locks.load()};
  }
};

/// The executes a steady-state count covers: 100, and 10 under a sanitizer, where each one is
/// many times slower (-O0 in CI) and one allocation or lock per execute shows all the same.
constexpr int kSteadyExecutes = PJRT_LITE_INTERPOSE ? 100 : 10;
constexpr const char* kSteadyLoop = PJRT_LITE_INTERPOSE ? "100 executes" : "10 executes";

/// A steady state takes no lock: no mutex anywhere in the process while it runs, on the
/// calling thread or on the pool's workers running its parallel parts.
void check_no_lock(const Counts& counts) {
  if constexpr (PJRT_LITE_INTERPOSE)
    CHECK_COUNT(counts.locks == 0, "mutex locks in ", kSteadyLoop, ": ", counts.locks);
}

/// No allocation or deallocation on the calling thread, none on any thread, and no lock, in
/// `what` (kSteadyLoop).
void check_steady(const Counts& counts, const std::string& what) {
  CHECK_COUNT(counts.allocations == 0, "allocations in ", what, ": ", counts.allocations);
  CHECK_COUNT(counts.deallocations == 0, "deallocations in ", what, ": ", counts.deallocations);
  CHECK_COUNT(counts.any_thread == 0, "allocations on all threads in ", what, ": ", counts.any_thread);
  check_no_lock(counts);
}

/// 16 bytes of host memory aligned for zero-copy.
struct AlignedHost {
  pjrt_lite::detail::AlignedBytes bytes = pjrt_lite::detail::allocate_aligned(16);
};

// The MLP layer: tanh(x . w + b), big enough that the pool splits the product across workers.
constexpr std::int64_t kBatch = 64, kIn = 128, kOut = 64;
// The element-wise chain: long enough that the pool splits it across workers too.
constexpr std::int64_t kChain = 1 << 16;

float x_at(std::int64_t i, std::int64_t k) {
  return std::sin(0.01f * static_cast<float>(i * kIn + k));
}
float w_at(std::int64_t k, std::int64_t j) {
  return 0.05f * std::cos(0.03f * static_cast<float>(k * kOut + j));
}
float b_at(std::int64_t j) { return 0.01f * static_cast<float>(j) - 0.3f; }
float u_at(std::int64_t i) { return std::sin(0.001f * static_cast<float>(i)); }
float v_at(std::int64_t i) { return std::cos(0.002f * static_cast<float>(i)); }

/// The largest error of `got` against expected(i), relative to max(1, |expected(i)|).
template <class F>
double max_error(const std::vector<float>& got, F expected) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = expected(i);
    worst = std::max(worst, std::abs(double(got[i]) - e) / std::max(1.0, std::abs(e)));
  }
  return worst;
}

template <class E>
cpu::Buffer<E> upload(cpu::Client<E>& client, const std::vector<float>& values,
                      std::vector<std::int64_t> dims) {
  auto b = client.buffer_from_host_buffer(std::span<const float>(values), dims);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  return std::move(b).value();
}

/// Runs `iterations` executes of `exe` on `args`, each followed by reading every output into
/// `host[j]` and dropping the outputs, as a control loop would. With `feed`, each iteration
/// first writes it into args[0] in place. Returns the first error.
template <class E>
Status control_loop(cpu::LoadedExecutable<E>& exe, std::span<cpu::Buffer<E>* const> args,
                    std::vector<std::vector<float>>& host, std::vector<cpu::Buffer<E>>& results,
                    const ExecuteOptions& options, int iterations, const std::vector<float>* feed) {
  cpu::Device<E>* device = exe.addressable_devices()[0];
  for (int it = 0; it < iterations; ++it) {
    if (feed != nullptr)
      PJRT_LITE_RETURN_IF_ERROR(args[0]->copy_raw_from_host(
          feed->data(), 0, static_cast<std::int64_t>(feed->size() * sizeof(float))));
    PJRT_LITE_RETURN_IF_ERROR(exe.execute_sharded(args, device, options, results));
    for (std::size_t j = 0; j < results.size(); ++j) {
      // Waiting for the output first makes the read a copy of ready data (a read of a pending
      // buffer registers a callback and makes a promise for its own future).
      PJRT_LITE_RETURN_IF_ERROR(results[j].get_ready_future().await());
      const auto bytes = static_cast<std::int64_t>(host[j].size() * sizeof(float));
      PJRT_LITE_RETURN_IF_ERROR(results[j].copy_raw_to_host(host[j].data(), 0, bytes).await());
    }
    results.clear();  // keeps its capacity; the outputs go back to the client's pools
  }
  return ok_status();
}

/// Compiles `graph`, warms it up, then counts the allocations of kSteadyExecutes executes
/// (each fed `feed` into its first argument, if given).
template <class E>
Counts count_steady_state(cpu::Client<E>& client, const Graph& graph,
                          std::vector<cpu::Buffer<E>*> args, std::vector<std::vector<float>>& host,
                          const std::vector<float>* feed = nullptr,
                          const ExecuteOptions& options = sync_options()) {
  auto exe = client.compile(graph);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<cpu::Buffer<E>> results;
  // Warm-up fills the pools, the run-state cache, the shared ready future and the vectors'
  // capacities; after it nothing may allocate.
  Status warm = control_loop<E>(*exe, args, host, results, options, 3, feed);
  REQUIRE_MESSAGE(warm.ok(), warm.to_string());
  Counts counts;
  Status status;
  {
    CountingScope scope;
    status = control_loop<E>(*exe, args, host, results, options, kSteadyExecutes, feed);
    counts = scope.stop();
  }
  REQUIRE_MESSAGE(status.ok(), status.to_string());
  return counts;
}

template <class E>
void check_mlp_layer(cpu::Client<E>& client) {
  GraphBuilder b("mlp_layer");
  Value x = b.parameter(Shape(DType::kF32, {kBatch, kIn}));
  Value w = b.parameter(Shape(DType::kF32, {kIn, kOut}));
  Value bias = b.parameter(Shape(DType::kF32, {kOut}));
  Value y = b.tanh(b.add(b.dot(x, w), b.broadcast_in_dim(bias, {kBatch, kOut}, {1})));
  Graph graph = build_ok(b, {y});

  std::vector<float> xs(kBatch * kIn), ws(kIn * kOut), bs(kOut);
  for (std::int64_t i = 0; i < kBatch; ++i)
    for (std::int64_t k = 0; k < kIn; ++k) xs[static_cast<std::size_t>(i * kIn + k)] = x_at(i, k);
  for (std::int64_t k = 0; k < kIn; ++k)
    for (std::int64_t j = 0; j < kOut; ++j) ws[static_cast<std::size_t>(k * kOut + j)] = w_at(k, j);
  for (std::int64_t j = 0; j < kOut; ++j) bs[static_cast<std::size_t>(j)] = b_at(j);
  auto xb = upload(client, xs, {kBatch, kIn});
  auto wb = upload(client, ws, {kIn, kOut});
  auto bb = upload(client, bs, {kOut});

  std::vector<std::vector<float>> host{std::vector<float>(kBatch * kOut)};
  // The input is written in place before every execute, as a control loop feeds each tick.
  Counts counts = count_steady_state<E>(client, graph, {&xb, &wb, &bb}, host, &xs);
  check_steady(counts, kSteadyLoop);

  CHECK(max_error(host[0], [](std::size_t index) {
          const auto i = static_cast<std::int64_t>(index) / kOut,
                     j = static_cast<std::int64_t>(index) % kOut;
          double acc = b_at(j);
          for (std::int64_t k = 0; k < kIn; ++k) acc += double(x_at(i, k)) * double(w_at(k, j));
          return std::tanh(acc);
        }) <= 1e-5);
}

template <class E>
void check_elementwise_chain(cpu::Client<E>& client) {
  GraphBuilder b("chain");
  Value u = b.parameter(Shape(DType::kF32, {kChain}));
  Value v = b.parameter(Shape(DType::kF32, {kChain}));
  Value half = b.broadcast_in_dim(b.constant(0.5f), {kChain}, {});
  Value inner = b.add(b.multiply(u, v), b.exponential(b.negate(u)));  // u * v + exp(-u)
  Value first = b.add(b.multiply(b.tanh(inner), half), v);
  Value second = b.add(b.multiply(u, u), v);
  Graph graph = build_ok(b, {first, second});

  std::vector<float> us(kChain), vs(kChain);
  for (std::int64_t i = 0; i < kChain; ++i) {
    us[static_cast<std::size_t>(i)] = u_at(i);
    vs[static_cast<std::size_t>(i)] = v_at(i);
  }
  auto ub = upload(client, us, {kChain});
  auto vb = upload(client, vs, {kChain});

  std::vector<std::vector<float>> host{std::vector<float>(kChain), std::vector<float>(kChain)};
  Counts counts = count_steady_state<E>(client, graph, {&ub, &vb}, host);
  check_steady(counts, kSteadyLoop);

  // Relative to max(1, |expected|), as the fused kernels compute in f32.
  CHECK(max_error(host[0], [](std::size_t i) {
          const double x = u_at(static_cast<std::int64_t>(i)),
                       y = v_at(static_cast<std::int64_t>(i));
          return std::tanh(x * y + std::exp(-x)) * 0.5 + y;
        }) <= 4e-6);
  CHECK(max_error(host[1], [](std::size_t i) {
          const double x = u_at(static_cast<std::int64_t>(i)),
                       y = v_at(static_cast<std::int64_t>(i));
          return x * x + y;
        }) <= 4e-6);
}

/// x_{k+1} = x_k / 2 + 1 by a while loop of kHalvings turns, then an if on the final counter
/// that keeps it (the loop ran kHalvings times) or negates it: the loop-carried values and
/// both regions live in preplanned memory.
constexpr std::int32_t kHalvings = 10;

template <class E>
void check_control_flow(cpu::Client<E>& client) {
  const Shape s32(DType::kS32, {}), vec(DType::kF32, {kChain});
  GraphBuilder cb("cond");
  Value ci = cb.parameter(s32);
  cb.parameter(vec);
  Graph cond = build_ok(cb, {cb.compare(ci, cb.constant(kHalvings), ComparisonDirection::kLt)});
  GraphBuilder bb("body");
  Value bi = bb.parameter(s32);
  Value bx = bb.parameter(vec);
  Value half = bb.broadcast_in_dim(bb.constant(0.5f), {kChain}, {});
  Value one = bb.broadcast_in_dim(bb.constant(1.0f), {kChain}, {});
  Graph body = build_ok(bb, {bb.add(bi, bb.constant(1)), bb.add(bb.multiply(bx, half), one)});
  GraphBuilder kb("keep");
  Graph keep = build_ok(kb, {kb.parameter(vec)});
  GraphBuilder nb("negate");
  Graph negate = build_ok(nb, {nb.negate(nb.parameter(vec))});
  GraphBuilder b("halvings");
  Value x = b.parameter(vec);
  std::vector<Value> loop = b.while_loop({b.constant(0), x}, cond, body);
  Value done = b.compare(loop[0], b.constant(kHalvings), ComparisonDirection::kEq);
  Graph graph = build_ok(b, b.if_op(done, {loop[1]}, keep, negate));

  std::vector<float> us(kChain);
  for (std::int64_t i = 0; i < kChain; ++i) us[static_cast<std::size_t>(i)] = u_at(i);
  auto ub = upload(client, us, {kChain});
  std::vector<std::vector<float>> host{std::vector<float>(kChain)};
  Counts counts = count_steady_state<E>(client, graph, {&ub}, host);
  check_steady(counts, kSteadyLoop);
  const double scale = std::ldexp(1.0, -kHalvings);
  CHECK(max_error(host[0], [&](std::size_t i) {
          return u_at(static_cast<std::int64_t>(i)) * scale + 2 * (1 - scale);
        }) <= 4e-6);
}

// sort (comparator region as a scalar program, a payload), top_k and reduce_precision: their
// permutations and comparator registers live in scratch planned at compile time.
template <class E>
void check_sort_and_top_k(cpu::Client<E>& client) {
  constexpr std::int64_t n = 300;
  GraphBuilder b("sorts");
  Value u = b.parameter(Shape(DType::kF32, {n}));
  Value v = b.parameter(Shape(DType::kF32, {n}));
  Graph by_u = make_sort_comparator(ComparisonDirection::kLt, DType::kF32, {DType::kF32}).value();
  std::vector<Value> sorted = b.sort({u, v}, std::move(by_u), 0, true);
  Value top = b.top_k(u, 5)[0];
  Value rounded = b.reduce_precision(u, 8, 7);
  Graph graph = build_ok(b, {sorted[0], sorted[1], top, rounded});

  std::vector<float> us(n), vs(n);
  for (std::int64_t i = 0; i < n; ++i) {
    us[static_cast<std::size_t>(i)] = std::round(8 * u_at(7 * i)) / 8;  // ties
    vs[static_cast<std::size_t>(i)] = static_cast<float>(i);
  }
  auto ub = upload(client, us, {n});
  auto vb = upload(client, vs, {n});
  std::vector<std::vector<float>> host{std::vector<float>(n), std::vector<float>(n),
                                       std::vector<float>(5), std::vector<float>(n)};
  Counts counts = count_steady_state<E>(client, graph, {&ub, &vb}, host);
  check_steady(counts, kSteadyLoop);

  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return us[x] < us[y]; });
  for (std::size_t i = 0; i < order.size(); ++i) {
    CHECK(host[0][i] == us[order[i]]);
    CHECK(host[1][i] == vs[order[i]]);
    CHECK(host[3][i] == static_cast<float>(bf16(us[i])));
  }
  for (std::size_t j = 0; j < 5; ++j) CHECK(host[2][j] == us[order[order.size() - 1 - j]]);
}

// Reads of at least async_transfer_threshold_bytes hop to a worker, which costs a promise:
// a control loop that reads its results synchronously raises the threshold above them (the
// largest output here is 12.25 MiB, the batch-8 convolution's).
cpu::ClientOptions loop_options(int threads) {
  return {.thread_count = threads, .async_transfer_threshold_bytes = std::int64_t{64} << 20};
}

// ---------------------------------------------------------------------------------------
// Programs the size of model layers. Eigen's GEMM packs its operands into buffers on the
// stack up to 128 KiB and on the heap beyond, so small shapes could not show what these do.

/// Under a sanitizer (and at -O0, as CI builds them) a model-sized execute is a hundred times
/// slower: the loops count fewer executes there, the GEMM is 256 square, the convolution
/// 20 x 20 and its batched form batch 2, the large sort 8K keys.
constexpr bool kSanitized = !PJRT_LITE_INTERPOSE;
int executes(int n) { return kSanitized ? 2 : n; }

/// A value in [-1, 1) for element i of input `seed`, reproducible and without structure.
float input_at(int seed, std::int64_t i) {
  return std::sin(0.37f * static_cast<float>(seed + 1) + 0.0117f * static_cast<float>(i));
}

Literal f32_input(int seed, std::vector<std::int64_t> dims) {
  Literal lit(Shape(DType::kF32, std::move(dims)));
  auto d = lit.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = input_at(seed, static_cast<std::int64_t>(i));
  return lit;
}

Graph parse(std::string_view text) {
  auto g = parse_stablehlo(text);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

/// What a steady loop of a program saw: its counts and the last outputs it read back.
struct SteadyRun {
  Counts counts;
  std::vector<Literal> outputs;
};

/// Compiles `graph`, uploads `inputs`, warms up, then counts `iterations` executes through
/// the allocation-free execute_sharded overload, each reading every output back into
/// preallocated host literals and dropping the outputs.
template <class E>
SteadyRun steady_run(cpu::Client<E>& client, const Graph& graph, const std::vector<Literal>& inputs,
                     int iterations, const ExecuteOptions& options = sync_options()) {
  auto exe = client.compile(graph);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<cpu::Buffer<E>> buffers;
  for (const Literal& input : inputs) {
    auto b = client.buffer_from_literal(input);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    buffers.push_back(std::move(b).value());
  }
  std::vector<cpu::Buffer<E>*> args;
  for (auto& b : buffers) args.push_back(&b);
  SteadyRun run;
  for (const Shape& shape : exe->output_shapes()) run.outputs.emplace_back(shape);
  std::vector<cpu::Buffer<E>> results;
  cpu::Device<E>* device = exe->addressable_devices()[0];
  auto loop = [&](int n) -> Status {
    for (int it = 0; it < n; ++it) {
      PJRT_LITE_RETURN_IF_ERROR(exe->execute_sharded(args, device, options, results));
      for (std::size_t j = 0; j < results.size(); ++j) {
        Literal& host = run.outputs[j];
        PJRT_LITE_RETURN_IF_ERROR(
            results[j].copy_raw_to_host(host.untyped_data(), 0, static_cast<std::int64_t>(host.size_bytes())).await());
      }
      results.clear();
    }
    return ok_status();
  };
  Status warm = loop(2);
  REQUIRE_MESSAGE(warm.ok(), warm.to_string());
  Status status;
  {
    CountingScope scope;
    status = loop(iterations);
    run.counts = scope.stop();
  }
  REQUIRE_MESSAGE(status.ok(), status.to_string());
  return run;
}

void check_allocation_free(const Counts& counts, int iterations) {
  check_steady(counts, str_cat(iterations, " executes"));
}

/// The largest error of `got` against expected(i) over every `step`-th element, relative to
/// max(1, |expected|).
template <class F>
double sampled_error(const Literal& got, std::int64_t step, F expected) {
  const auto values = got.data<float>();
  double worst = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(values.size()); i += step) {
    const double e = expected(i);
    worst = std::max(worst, std::abs(double(values[static_cast<std::size_t>(i)]) - e) / std::max(1.0, std::abs(e)));
  }
  return worst;
}

template <class E>
void check_gemm_512(cpu::Client<E>& client) {
  constexpr std::int64_t n = kSanitized ? 256 : 512;  // 256: packed blocks still past 128 KiB
  const std::string t = str_cat("tensor<", n, "x", n, "xf32>");
  const Graph graph = parse(str_cat("func.func @main(%a: ", t, ", %b: ", t, ") -> ", t, " {\n",
                                    "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (", t, ", ", t,
                                    ") -> ", t, "\n  return %0 : ", t, "\n}"));
  const std::vector<Literal> in{f32_input(0, {n, n}), f32_input(1, {n, n})};
  SteadyRun run = steady_run(client, graph, in, executes(10));
  check_allocation_free(run.counts, executes(10));
  const auto a = in[0].data<float>(), b = in[1].data<float>();
  CHECK(sampled_error(run.outputs[0], 97, [&](std::int64_t index) {
          const std::int64_t i = index / n, j = index % n;
          double acc = 0;
          for (std::int64_t k = 0; k < n; ++k)
            acc += double(a[static_cast<std::size_t>(i * n + k)]) * b[static_cast<std::size_t>(k * n + j)];
          return acc;
        }) <= 1e-4);
}

/// A 3x3 convolution, 64 -> 64 channels on 56x56 (NHWC, padded to keep the size), plus a bias
/// and a relu: a ResNet block's layer.
template <class E>
void check_convolution_layer(cpu::Client<E>& client, std::int64_t batch) {
  // 20 x 20 under sanitizers: still several row blocks of the implicit GEMM, 576 deep (400
  // rows in blocks of 336 on one thread).
  constexpr std::int64_t h = kSanitized ? 20 : 56, w = h, c = 64;
  const std::string t = str_cat("tensor<", batch, "x", h, "x", w, "x64xf32>");
  const Graph graph = parse(str_cat(R"(
func.func @main(%x: )", t, R"(, %k: tensor<3x3x64x64xf32>, %bias: tensor<64xf32>) -> )", t, R"( {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : ()", t, R"(, tensor<3x3x64x64xf32>) -> )", t, R"(
  %1 = stablehlo.broadcast_in_dim %bias, dims = [3] : (tensor<64xf32>) -> )", t, R"(
  %2 = stablehlo.add %0, %1 : )", t, R"(
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> )", t, R"(
  %4 = stablehlo.maximum %2, %3 : )", t, R"(
  return %4 : )", t, R"(
})"));
  const std::vector<Literal> in{f32_input(2, {batch, h, w, c}), f32_input(3, {3, 3, c, c}), f32_input(4, {c})};
  const int iterations = executes(batch == 1 ? 10 : 3);
  SteadyRun run = steady_run(client, graph, in, iterations);
  check_allocation_free(run.counts, iterations);
  const auto x = in[0].data<float>(), k = in[1].data<float>(), bias = in[2].data<float>();
  CHECK(sampled_error(run.outputs[0], 101, [&](std::int64_t index) {
          const std::int64_t o = index % c, col = index / c % w, row = index / (c * w) % h, n = index / (c * w * h);
          double acc = bias[static_cast<std::size_t>(o)];
          for (std::int64_t dy = 0; dy < 3; ++dy)
            for (std::int64_t dx = 0; dx < 3; ++dx) {
              const std::int64_t y = row + dy - 1, xx = col + dx - 1;
              if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
              for (std::int64_t i = 0; i < c; ++i)
                acc += double(x[static_cast<std::size_t>(((n * h + y) * w + xx) * c + i)]) *
                       k[static_cast<std::size_t>(((dy * 3 + dx) * c + i) * c + o)];
            }
          return std::max(acc, 0.0);
        }) <= 1e-4);
}

/// Self-attention over 128 tokens of width 256 with 4 heads: the q, k, v and output
/// projections, scores scaled by 1/sqrt(64), a softmax over the keys.
template <class E>
void check_attention(cpu::Client<E>& client) {
  constexpr std::int64_t tokens = 128, width = 256, heads = 4, head = width / heads;
  const Graph graph = parse(R"(
func.func @main(%x: tensor<128x256xf32>, %wq: tensor<256x256xf32>, %wk: tensor<256x256xf32>, %wv: tensor<256x256xf32>, %wo: tensor<256x256xf32>) -> tensor<128x256xf32> {
  %q0 = stablehlo.dot_general %x, %wq, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  %k0 = stablehlo.dot_general %x, %wk, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  %v0 = stablehlo.dot_general %x, %wv, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  %q = stablehlo.reshape %q0 : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
  %k = stablehlo.reshape %k0 : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
  %v = stablehlo.reshape %v0 : (tensor<128x256xf32>) -> tensor<128x4x64xf32>
  %s0 = stablehlo.dot_general %q, %k, batching_dims = [1] x [1], contracting_dims = [2] x [2] : (tensor<128x4x64xf32>, tensor<128x4x64xf32>) -> tensor<4x128x128xf32>
  %scale = stablehlo.constant dense<0.125> : tensor<4x128x128xf32>
  %s = stablehlo.multiply %s0, %scale : tensor<4x128x128xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%s init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<4x128x128xf32>, tensor<f32>) -> tensor<4x128xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<4x128xf32>) -> tensor<4x128x128xf32>
  %d = stablehlo.subtract %s, %mb : tensor<4x128x128xf32>
  %e = stablehlo.exponential %d : tensor<4x128x128xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<4x128x128xf32>, tensor<f32>) -> tensor<4x128xf32>
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0, 1] : (tensor<4x128xf32>) -> tensor<4x128x128xf32>
  %p = stablehlo.divide %e, %sb : tensor<4x128x128xf32>
  %o = stablehlo.dot_general %p, %v, batching_dims = [0] x [1], contracting_dims = [2] x [0] : (tensor<4x128x128xf32>, tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
  %ot = stablehlo.transpose %o, dims = [1, 0, 2] : (tensor<4x128x64xf32>) -> tensor<128x4x64xf32>
  %or = stablehlo.reshape %ot : (tensor<128x4x64xf32>) -> tensor<128x256xf32>
  %y = stablehlo.dot_general %or, %wo, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  return %y : tensor<128x256xf32>
})");
  std::vector<Literal> in{f32_input(5, {tokens, width})};
  for (int i = 0; i < 4; ++i) {
    Literal wt = f32_input(6 + i, {width, width});
    for (float& v : wt.data<float>()) v *= 0.1f;  // keeps the scores in a range where softmax is not one-hot
    in.push_back(std::move(wt));
  }
  SteadyRun run = steady_run(client, graph, in, executes(20));
  check_allocation_free(run.counts, executes(20));

  // The same computation in double, written out.
  auto project = [&](const Literal& w) {
    const std::span<const float> x = in[0].data<float>(), wd = w.data<float>();
    std::vector<double> out(tokens * width, 0.0);
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t i = 0; i < width; ++i)
        for (std::int64_t j = 0; j < width; ++j)
          out[static_cast<std::size_t>(t * width + j)] +=
              double(x[static_cast<std::size_t>(t * width + i)]) * wd[static_cast<std::size_t>(i * width + j)];
    return out;
  };
  const std::vector<double> q = project(in[1]), k = project(in[2]), v = project(in[3]);
  std::vector<double> mixed(tokens * width, 0.0), p(tokens);
  for (std::int64_t hd = 0; hd < heads; ++hd)
    for (std::int64_t i = 0; i < tokens; ++i) {
      double most = -INFINITY, total = 0;
      for (std::int64_t j = 0; j < tokens; ++j) {
        double dot = 0;
        for (std::int64_t e = 0; e < head; ++e)
          dot += q[static_cast<std::size_t>(i * width + hd * head + e)] * k[static_cast<std::size_t>(j * width + hd * head + e)];
        p[static_cast<std::size_t>(j)] = dot / std::sqrt(double(head));
        most = std::max(most, p[static_cast<std::size_t>(j)]);
      }
      for (double& x : p) total += x = std::exp(x - most);
      for (std::int64_t j = 0; j < tokens; ++j)
        for (std::int64_t e = 0; e < head; ++e)
          mixed[static_cast<std::size_t>(i * width + hd * head + e)] +=
              p[static_cast<std::size_t>(j)] / total * v[static_cast<std::size_t>(j * width + hd * head + e)];
    }
  const auto wo = in[4].data<float>();
  CHECK(sampled_error(run.outputs[0], 7, [&](std::int64_t index) {
          const std::int64_t t = index / width, j = index % width;
          double acc = 0;
          for (std::int64_t i = 0; i < width; ++i)
            acc += mixed[static_cast<std::size_t>(t * width + i)] * wo[static_cast<std::size_t>(i * width + j)];
          return acc;
        }) <= 1e-4);
}

/// Element-wise and reduction programs of 256K and 1M elements: a product of two
/// f32[256,1024], row sums of one, and the sum of f32[1024,1024].
template <class E>
void check_mid_size(cpu::Client<E>& client) {
  const Graph multiply = parse(R"(
func.func @main(%a: tensor<256x1024xf32>, %b: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<256x1024xf32>
  return %0 : tensor<256x1024xf32>
})");
  const Graph row_sum = parse(R"(
func.func @main(%a: tensor<256x1024xf32>) -> tensor<256xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
  return %0 : tensor<256xf32>
})");
  const Graph total = parse(R"(
func.func @main(%a: tensor<1024x1024xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})");
  const Literal a = f32_input(10, {256, 1024}), b = f32_input(11, {256, 1024}), big = f32_input(12, {1024, 1024});
  const auto av = a.data<float>(), bv = b.data<float>(), bigv = big.data<float>();

  SteadyRun product = steady_run(client, multiply, {a, b}, executes(50));
  check_allocation_free(product.counts, executes(50));
  CHECK(sampled_error(product.outputs[0], 1, [&](std::int64_t i) {
          return double(av[static_cast<std::size_t>(i)]) * bv[static_cast<std::size_t>(i)];
        }) <= 1e-7);

  SteadyRun rows = steady_run(client, row_sum, {a}, executes(50));
  check_allocation_free(rows.counts, executes(50));
  CHECK(sampled_error(rows.outputs[0], 1, [&](std::int64_t r) {
          double acc = 0;
          for (std::int64_t j = 0; j < 1024; ++j) acc += av[static_cast<std::size_t>(r * 1024 + j)];
          return acc;
        }) <= 1e-4);

  SteadyRun sum = steady_run(client, total, {big}, executes(20));
  check_allocation_free(sum.counts, executes(20));
  double expected = 0;
  for (float x : bigv) expected += x;
  CHECK(std::abs(double(sum.outputs[0].data<float>()[0]) - expected) <= 1e-3 * std::max(1.0, std::abs(expected)));
}

/// Softmax and layer norm over the rows of f32[256, 1024]: each one fused row kernel whose
/// per-row values and kept rows live in the arena.
template <class E>
void check_row_fusion(cpu::Client<E>& client) {
  const Graph softmax = parse(R"(
func.func @main(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
  %d = stablehlo.subtract %x, %mb : tensor<256x1024xf32>
  %e = stablehlo.exponential %d : tensor<256x1024xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
  %y = stablehlo.divide %e, %sb : tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
})");
  const Graph layer_norm = parse(R"(
func.func @main(%x: tensor<256x1024xf32>, %g: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %inv = stablehlo.constant dense<9.765625E-4> : tensor<256xf32>
  %eps = stablehlo.constant dense<1.0E-5> : tensor<256xf32>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
  %mean = stablehlo.multiply %sum, %inv : tensor<256xf32>
  %mb = stablehlo.broadcast_in_dim %mean, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
  %xc = stablehlo.subtract %x, %mb : tensor<256x1024xf32>
  %sq = stablehlo.multiply %xc, %xc : tensor<256x1024xf32>
  %ss = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
  %var = stablehlo.multiply %ss, %inv : tensor<256xf32>
  %ve = stablehlo.add %var, %eps : tensor<256xf32>
  %r = stablehlo.rsqrt %ve : tensor<256xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<256xf32>) -> tensor<256x1024xf32>
  %n = stablehlo.multiply %xc, %rb : tensor<256x1024xf32>
  %gb = stablehlo.broadcast_in_dim %g, dims = [1] : (tensor<1024xf32>) -> tensor<256x1024xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<1024xf32>) -> tensor<256x1024xf32>
  %s = stablehlo.multiply %n, %gb : tensor<256x1024xf32>
  %y = stablehlo.add %s, %bb : tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
})");
  constexpr std::int64_t kRows = 256, kCols = 1024;
  const Literal x = f32_input(13, {kRows, kCols}), gamma = f32_input(14, {kCols}), beta = f32_input(15, {kCols});
  const auto xv = x.data<float>(), gv = gamma.data<float>(), bv = beta.data<float>();
  // Each row's maximum, sum of exp(x - maximum), mean and variance, in f64.
  std::vector<double> row_max(kRows, -INFINITY), row_sum(kRows, 0.0), row_mean(kRows, 0.0), row_var(kRows, 0.0);
  for (std::size_t r = 0; r < static_cast<std::size_t>(kRows); ++r) {
    const auto row = xv.subspan(r * kCols, kCols);
    for (float v : row) row_max[r] = std::max(row_max[r], double(v));
    for (float v : row) row_sum[r] += std::exp(double(v) - row_max[r]);
    for (float v : row) row_mean[r] += v;
    row_mean[r] /= kCols;
    for (float v : row) row_var[r] += (v - row_mean[r]) * (v - row_mean[r]);
    row_var[r] /= kCols;
  }

  SteadyRun soft = steady_run(client, softmax, {x}, executes(50));
  check_allocation_free(soft.counts, executes(50));
  CHECK(sampled_error(soft.outputs[0], 7, [&](std::int64_t i) {
          const auto r = static_cast<std::size_t>(i / kCols);
          return std::exp(double(xv[static_cast<std::size_t>(i)]) - row_max[r]) / row_sum[r];
        }) <= 1e-6);

  SteadyRun norm = steady_run(client, layer_norm, {x, gamma, beta}, executes(50));
  check_allocation_free(norm.counts, executes(50));
  CHECK(sampled_error(norm.outputs[0], 7, [&](std::int64_t i) {
          const auto r = static_cast<std::size_t>(i / kCols), j = static_cast<std::size_t>(i % kCols);
          return (double(xv[static_cast<std::size_t>(i)]) - row_mean[r]) / std::sqrt(row_var[r] + 1e-5) * gv[j] + bv[j];
        }) <= 1e-4);
}

/// An embedding lookup (gather of 256 rows of a 1000 x 64 table) and its transpose, a
/// scatter-add of 256 rows into the table's shape; indices repeat.
template <class E>
void check_gather_scatter(cpu::Client<E>& client) {
  constexpr std::int64_t rows = 1000, width = 64, lookups = 256;
  const Graph graph = parse(R"(
func.func @main(%table: tensor<1000x64xf32>, %ids: tensor<256x1xi32>, %grads: tensor<256x64xf32>) -> (tensor<256x64xf32>, tensor<1000x64xf32>) {
  %0 = "stablehlo.gather"(%table, %ids) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 64>}> : (tensor<1000x64xf32>, tensor<256x1xi32>) -> tensor<256x64xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1000x64xf32>
  %1 = "stablehlo.scatter"(%zero, %ids, %grads) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
    %2 = stablehlo.add %lhs, %rhs : tensor<f32>
    stablehlo.return %2 : tensor<f32>
  }) : (tensor<1000x64xf32>, tensor<256x1xi32>, tensor<256x64xf32>) -> tensor<1000x64xf32>
  return %0, %1 : tensor<256x64xf32>, tensor<1000x64xf32>
})");
  Literal ids(Shape(DType::kS32, {lookups, 1}));
  for (std::int64_t i = 0; i < lookups; ++i) ids.data<std::int32_t>()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 37) % 300);
  const std::vector<Literal> in{f32_input(13, {rows, width}), ids, f32_input(14, {lookups, width})};
  SteadyRun run = steady_run(client, graph, in, executes(50));
  check_allocation_free(run.counts, executes(50));
  const auto table = in[0].data<float>(), grads = in[2].data<float>();
  const auto id = ids.data<std::int32_t>();
  CHECK(sampled_error(run.outputs[0], 1, [&](std::int64_t index) {
          return table[static_cast<std::size_t>(id[static_cast<std::size_t>(index / width)] * width + index % width)];
        }) == 0);
  std::vector<double> added(rows * width, 0.0);
  for (std::int64_t i = 0; i < lookups; ++i)
    for (std::int64_t j = 0; j < width; ++j)
      added[static_cast<std::size_t>(id[static_cast<std::size_t>(i)] * width + j)] += grads[static_cast<std::size_t>(i * width + j)];
  CHECK(sampled_error(run.outputs[1], 1, [&](std::int64_t index) { return added[static_cast<std::size_t>(index)]; }) <= 1e-6);
}

/// A stable sort of 64K keys carrying their positions (8K under sanitizers: the sort's
/// permutations live in scratch planned at compile time whatever their size).
template <class E>
void check_large_sort(cpu::Client<E>& client) {
  constexpr std::int64_t n = kSanitized ? 1 << 13 : 1 << 16;
  GraphBuilder b("large_sort");
  Value keys = b.parameter(Shape(DType::kF32, {n}));
  Value positions = b.parameter(Shape(DType::kF32, {n}));
  Graph by_key = make_sort_comparator(ComparisonDirection::kLt, DType::kF32, {DType::kF32}).value();
  Graph graph = build_ok(b, b.sort({keys, positions}, std::move(by_key), 0, true));
  Literal key_values = f32_input(15, {n}), position_values(Shape(DType::kF32, {n}));
  for (std::int64_t i = 0; i < n; ++i) {
    auto& k = key_values.data<float>()[static_cast<std::size_t>(i)];
    k = std::round(k * 64) / 64;  // ties, so stability shows
    position_values.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(i);
  }
  SteadyRun run = steady_run(client, graph, {key_values, position_values}, executes(20));
  check_allocation_free(run.counts, executes(20));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto kv = key_values.data<float>();
  // The comparator compares floats in total order, where -0 sorts before +0.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return kv[x] < kv[y] || (kv[x] == kv[y] && std::signbit(kv[x]) && !std::signbit(kv[y]));
  });
  bool same = true;
  for (std::size_t i = 0; i < order.size(); ++i)
    same &= run.outputs[0].data<float>()[i] == kv[order[i]] &&
            run.outputs[1].data<float>()[i] == static_cast<float>(order[i]);
  CHECK(same);
}

/// Every steady-state program above, each a subcase of the calling test.
template <class E>
void check_every_program(cpu::Client<E>& client) {
  SUBCASE("mlp layer") { check_mlp_layer(client); }
  SUBCASE("element-wise chain") { check_elementwise_chain(client); }
  SUBCASE("while loop and if") { check_control_flow(client); }
  SUBCASE("sort, top_k and reduce_precision") { check_sort_and_top_k(client); }
  SUBCASE("gemm 512 (256 under sanitizers)") { check_gemm_512(client); }
  SUBCASE("convolution layer at batch 1 (20 x 20 under sanitizers)") { check_convolution_layer(client, 1); }
  SUBCASE("convolution layer at batch 8 (2 under sanitizers)") { check_convolution_layer(client, kSanitized ? 2 : 8); }
  SUBCASE("self-attention") { check_attention(client); }
  SUBCASE("mid-size element-wise and reductions") { check_mid_size(client); }
  SUBCASE("softmax and layer norm over rows") { check_row_fusion(client); }
  SUBCASE("gather and scatter") { check_gather_scatter(client); }
  SUBCASE("sort of 64K keys (8K under sanitizers)") { check_large_sort(client); }
}

}  // namespace

TEST_CASE("allocation: a steady-state synchronous execute allocates nothing on an inline client") {
  auto client = cpu::Client<cpu::InlineExecutor>::create(loop_options(0)).value();
  check_every_program(*client);
}

TEST_CASE(
    "allocation: a steady-state synchronous execute allocates nothing on a thread pool client") {
  auto client = cpu::Client<cpu::ThreadPool>::create(loop_options(2)).value();
  check_every_program(*client);
}

TEST_CASE(
    "allocation: a steady-state asynchronous execute on a thread pool allocates only its promise and "
    "takes no lock") {
  // Each execute hands the program to a worker and fulfils its outputs' shared promise there;
  // the loop then waits on the outputs' futures. The promise's shared state is the one
  // allocation; the task handed to the worker fits the pool's inline storage, and neither
  // side takes a mutex.
  auto client = cpu::Client<cpu::ThreadPool>::create(loop_options(2)).value();
  GraphBuilder b("async_chain");
  Value u = b.parameter(Shape(DType::kF32, {kChain}));
  Value v = b.parameter(Shape(DType::kF32, {kChain}));
  Graph graph = build_ok(b, {b.add(b.multiply(u, v), b.tanh(u))});
  std::vector<float> us(kChain), vs(kChain);
  for (std::int64_t i = 0; i < kChain; ++i) {
    us[static_cast<std::size_t>(i)] = u_at(i);
    vs[static_cast<std::size_t>(i)] = v_at(i);
  }
  auto ub = upload(*client, us, {kChain});
  auto vb = upload(*client, vs, {kChain});
  std::vector<std::vector<float>> host{std::vector<float>(kChain)};
  ExecuteOptions async;
  async.mode = ExecutionMode::kAsynchronous;
  const Counts counts = count_steady_state<cpu::ThreadPool>(*client, graph, {&ub, &vb}, host, nullptr, async);
  CHECK_COUNT(counts.allocations == kSteadyExecutes, "allocations on the caller in ", kSteadyLoop,
              ": ", counts.allocations);
  CHECK_COUNT(counts.any_thread == kSteadyExecutes, "allocations on all threads in ", kSteadyLoop,
              ": ", counts.any_thread);
  check_no_lock(counts);
  CHECK(max_error(host[0], [&](std::size_t i) {
          return double(us[i]) * double(vs[i]) + std::tanh(double(us[i]));
        }) <= 1e-5);
}

TEST_CASE("allocation: a donating state-update loop allocates nothing and updates in place") {
  // s <- tanh(s . w + b), the shape of a recurrent controller: the state is donated each
  // step, so its memory backs the next state and the loop never touches the heap.
  constexpr std::int64_t kRows = 4, kWidth = 16;
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  GraphBuilder b("step");
  Value s = b.parameter(Shape(DType::kF32, {kRows, kWidth}));
  Value w = b.parameter(Shape(DType::kF32, {kWidth, kWidth}));
  Value bias = b.parameter(Shape(DType::kF32, {kWidth}));
  auto exe =
      client
          ->compile(build_ok(
              b, {b.tanh(b.add(b.dot(s, w), b.broadcast_in_dim(bias, {kRows, kWidth}, {1})))}))
          .value();
  REQUIRE(exe.donation_targets()[0] == 0);

  std::vector<double> state(kRows * kWidth), ws(kWidth * kWidth), bs(kWidth);
  for (std::size_t i = 0; i < state.size(); ++i) state[i] = std::sin(0.1 * double(i));
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = 0.05 * std::cos(0.07 * double(i));
  for (std::size_t i = 0; i < bs.size(); ++i) bs[i] = 0.01 * double(i);
  const auto to_f32 = [](const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
  };
  auto sb = upload(*client, to_f32(state), {kRows, kWidth});
  auto wb = upload(*client, to_f32(ws), {kWidth, kWidth});
  auto bb = upload(*client, to_f32(bs), {kWidth});

  ExecuteOptions options = sync_options();
  options.donated_arguments = {0};
  std::vector<cpu::Buffer<cpu::InlineExecutor>> results;
  std::vector<float> host(kRows * kWidth);
  const void* home = nullptr;
  int moved = 0;  // steps whose new state is not in the memory of the old one
  Status status;
  auto step = [&] {
    cpu::Buffer<cpu::InlineExecutor>* args[] = {&sb, &wb, &bb};
    if (status.ok()) status = exe.execute_sharded(args, client->devices()[0], options, results);
    if (!status.ok()) return;
    sb =
        std::move(results[0]);  // the donated old state is deleted; its state goes back to the pool
    if (sb.acquire_external_reference().value().data() != home) ++moved;
    status =
        sb.copy_raw_to_host(host.data(), 0, static_cast<std::int64_t>(host.size() * sizeof(float)))
            .await();
  };
  home = sb.acquire_external_reference().value().data();
  for (int i = 0; i < 3; ++i) step();
  Counts counts;
  {
    CountingScope scope;
    for (int i = 0; i < 100; ++i) step();
    counts = scope.stop();
  }
  REQUIRE_MESSAGE(status.ok(), status.to_string());
  CHECK(moved == 0);
  CHECK_COUNT(counts.allocations == 0, "allocations in 100 steps: ", counts.allocations);
  CHECK_COUNT(counts.deallocations == 0, "deallocations in 100 steps: ", counts.deallocations);
  check_no_lock(counts);

  for (int it = 0; it < 103; ++it) {
    std::vector<double> next(state.size());
    for (std::int64_t r = 0; r < kRows; ++r)
      for (std::int64_t j = 0; j < kWidth; ++j) {
        double acc = bs[static_cast<std::size_t>(j)];
        for (std::int64_t k = 0; k < kWidth; ++k)
          acc += state[static_cast<std::size_t>(r * kWidth + k)] *
                 ws[static_cast<std::size_t>(k * kWidth + j)];
        next[static_cast<std::size_t>(r * kWidth + j)] = std::tanh(acc);
      }
    state = next;
  }
  // Each row of w sums to at most 0.8 in magnitude, so the map contracts and f32 rounding
  // does not compound over the steps.
  CHECK(max_error(host, [&](std::size_t i) { return state[i]; }) <= 1e-4);
}

TEST_CASE("allocation: with the memory pool off the same loop allocates and the counter sees it") {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.memory_pool_bytes = 0}).value();
  GraphBuilder b("negate");
  Value x = b.parameter(Shape(DType::kF32, {256}));
  Graph graph = build_ok(b, {b.negate(x)});
  std::vector<float> xs(256, 2.0f);
  auto xb = upload(*client, xs, {256});
  std::vector<std::vector<float>> host{std::vector<float>(256)};
  Counts counts = count_steady_state<cpu::InlineExecutor>(*client, graph, {&xb}, host);
  CHECK_COUNT(counts.allocations == kSteadyExecutes);  // exactly the output block of each execute
  CHECK_COUNT(counts.deallocations == kSteadyExecutes);
  CHECK(host[0][255] == -2.0f);
}

TEST_CASE("allocation: the memory pool recycles by size class within its budget") {
  using cpu::detail::MemoryPool;
  using cpu::detail::MemoryRef;
  auto pool = std::make_shared<MemoryPool>(64 << 10);
  const void* first = nullptr;
  {
    MemoryRef a = MemoryPool::allocate(pool, 1000);
    REQUIRE(a->data != nullptr);
    CHECK(a->size == 1000);
    CHECK(reinterpret_cast<std::uintptr_t>(a->data) % kHostAlignment == 0);
    CHECK(a.use_count() == 1);
    first = a->data;
  }
  CHECK(pool->free_blocks() == 1);
  CHECK(MemoryPool::capacity_for(900) ==
        MemoryPool::capacity_for(1000));  // 897..1024 share a class
  {
    Counts counts;
    const void* second = nullptr;
    long shared = 0, alone = 0;
    std::size_t free_while_live = 0;
    {
      CountingScope scope;
      MemoryRef b = MemoryPool::allocate(pool, 900);
      second = b->data;
      MemoryRef c = b;  // copies share the count; the block returns once both are gone
      shared = c.use_count();
      b.reset();
      alone = c.use_count();
      free_while_live = pool->free_blocks();
      c.reset();
      counts = scope.stop();
    }
    CHECK(second == first);
    CHECK(shared == 2);
    CHECK(alone == 1);
    CHECK(free_while_live == 0);
    CHECK_COUNT(counts.allocations == 0);
    CHECK_COUNT(counts.deallocations == 0);
    CHECK(pool->free_blocks() == 1);
  }
  CHECK(MemoryPool::capacity_for(1) == 64);
  CHECK(MemoryPool::capacity_for(65) == 80);
  CHECK(MemoryPool::capacity_for(1025) == 1280);
  CHECK(MemoryPool::capacity_for(std::size_t{3} << 20) == std::size_t{3} << 20);

  // Releasing more than the budget keeps what fits and frees the rest.
  {
    std::vector<MemoryRef> many;
    for (int i = 0; i < 100; ++i) many.push_back(MemoryPool::allocate(pool, 1024));
  }
  CHECK(pool->free_bytes() <= std::size_t{64} << 10);
  CHECK(pool->free_blocks() > 10);
  CHECK(pool->free_blocks() < 64);
  const std::size_t kept = pool->free_blocks();
  // Too big for the budget, or empty: not pooled.
  MemoryPool::allocate(pool, 1 << 20).reset();
  CHECK(pool->free_blocks() == kept);
  MemoryRef empty = MemoryPool::allocate(pool, 0);
  CHECK(empty->data == nullptr);
  CHECK(empty->size == 0);

  // After close, free blocks are gone and released ones are freed, not kept.
  MemoryRef live = MemoryPool::allocate(pool, 1000);
  pool->close();
  CHECK(pool->free_blocks() == 0);
  live.reset();
  CHECK(pool->free_blocks() == 0);
  CHECK(MemoryPool::allocate(pool, 1000)->size == 1000);

  // A block outliving every other owner of its pool frees both when released.
  MemoryRef last = MemoryPool::allocate(std::make_shared<MemoryPool>(1 << 20), 4096);
  std::memset(last->data, 1, 4096);
  last.reset();
}

TEST_CASE("allocation: memory released after its client is gone is freed safely") {
  AlignedHost host;
  std::atomic<int> done{0};
  std::vector<float> values{1, 2, 3, 4};
  std::optional<cpu::ExternalReference> owned, zero_copy;
  {
    auto client = cpu::Client<cpu::ThreadPool>::create({.thread_count = 1}).value();
    auto buffer = upload(*client, values, {4});
    owned = buffer.acquire_external_reference().value();
    std::memcpy(host.bytes.get(), values.data(), 16);
    auto aliased =
        client
            ->buffer_from_host_buffer(
                std::span<const std::byte>(host.bytes.get(), 16), DType::kF32,
                std::vector<std::int64_t>{4}, std::nullopt, HostBufferSemantics::kImmutableZeroCopy,
                [&] { ++done; }, client->devices()[0])
            .value();
    zero_copy = aliased.acquire_external_reference().value();
    CHECK(zero_copy->data() == host.bytes.get());
  }
  // The client, its pools and its buffers are gone; the references still hold the memory.
  REQUIRE(owned->size() == 16);
  CHECK(std::memcmp(owned->data(), values.data(), 16) == 0);
  owned.reset();
  CHECK(done == 0);
  zero_copy.reset();
  CHECK(done == 1);
}

TEST_CASE("allocation: copy_raw_to_host copies at once when ready and waits otherwise") {
  auto client = cpu::Client<cpu::ThreadPool>::create({.thread_count = 1}).value();
  auto memory = cpu::detail::DeviceMemory::allocate(8);
  const float values[2] = {5, 6};
  std::memcpy(memory->data, values, 8);
  auto [promise, ready] = make_promise<void>();
  auto pending = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0],
                                     Shape(DType::kF32, {2}), memory, ready);
  float out[2] = {0, 0};
  Future<> copy = pending.copy_raw_to_host(out, 4, 4);
  CHECK_FALSE(copy.is_ready());
  promise.set_value();
  CHECK(copy.await().ok());
  CHECK(out[0] == 6);
  Future<> now = pending.copy_raw_to_host(out, 0, 4);
  CHECK(now.is_ready());  // ready and small: done before returning
  CHECK(out[0] == 5);

  auto [failing, failed] = make_promise<void>();
  auto broken = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0],
                                    Shape(DType::kF32, {2}), memory, failed);
  failing.set_error(data_loss_error("transfer failed"));
  CHECK(broken.copy_raw_to_host(out, 0, 8).await().message() == "transfer failed");
}

TEST_CASE("allocation: make_ready_future shares one state") {
  Future<> warm = make_ready_future();
  Counts counts;
  bool all_ok = true;
  {
    CountingScope scope;
    for (int i = 0; i < 100; ++i) {
      Future<> f = make_ready_future();
      all_ok &= f.is_ready() && f.await().ok();
      int ran = 0;
      f.on_ready([&](const Status& s) { ran += s.ok(); });  // a ready future runs it at once
      all_ok &= ran == 1;
    }
    counts = scope.stop();
  }
  CHECK(all_ok);
  CHECK_COUNT(counts.allocations == 0);
}

TEST_CASE(
    "allocation: the thread pool queue overflows in order, then schedules without allocating "
    "or locking") {
  cpu::ThreadPool pool(1);
  constexpr int kOverflowing = 3 * static_cast<int>(cpu::ThreadPool::kRingCapacity);
  constexpr int kAll = kOverflowing + 200;
  std::vector<int> order;
  order.reserve(kAll);
  std::atomic<int> finished{0};
  std::atomic<bool> started{false}, open{false};
  // Holds the only worker, so the tasks queue up behind it.
  auto gate = [&] {
    started = true;
    while (!open) std::this_thread::yield();
  };
  auto run_round = [&](int first, int count) {
    started = false;
    open = false;
    pool.schedule(gate);
    while (!started) std::this_thread::yield();
    for (int i = first; i < first + count; ++i)
      pool.schedule([&order, &finished, i] {
        order.push_back(i);
        ++finished;
      });
    open = true;
    while (finished < first + count) std::this_thread::yield();
  };
  // Three times the lock-free ring: the rest overflows to the locked queue, which grows,
  // and still runs after the ring's tasks, in order.
  run_round(0, kOverflowing);
  Counts counts;
  {
    CountingScope scope;
    run_round(kOverflowing, 200);
    counts = scope.stop();
  }
  CHECK_COUNT(counts.allocations == 0);
  CHECK_COUNT(counts.any_thread == 0);
  check_no_lock(counts);
  REQUIRE(order.size() == static_cast<std::size_t>(kAll));
  bool fifo = true;
  for (int i = 0; i < kAll; ++i) fifo &= order[static_cast<std::size_t>(i)] == i;
  CHECK(fifo);
}

TEST_CASE("allocation: a cache-hit call of a jitted function on buffers allocates nothing") {
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  auto f = jit(*client, [](const Tensor& x, const Tensor& y) { return tanh(x * y) + 1.0f; });
  const std::vector<float> xv{1, 2, 3, 4}, yv{0.5f, 0.25f, -1, 2};
  auto x = upload(*client, xv, {4});
  auto y = upload(*client, yv, {4});
  REQUIRE(f.executable(x, y).ok());
  cpu::Buffer<cpu::InlineExecutor>* args[] = {&x, &y};
  std::vector<cpu::Buffer<cpu::InlineExecutor>> out;
  std::vector<float> host(4);
  const ExecuteOptions options = sync_options();
  REQUIRE(f.execute(args, out, options).ok());  // warm-up: pools and the run state
  out.clear();
  Counts counts;
  {
    CountingScope scope;
    for (int i = 0; i < 100; ++i) {
      if (!f.execute(args, out, options).ok()) break;
      if (!out[0].copy_raw_to_host(host.data(), 0, 16).await().ok()) break;
      out.clear();
    }
    counts = scope.stop();
  }
  CHECK_COUNT(counts.allocations == 0);
  CHECK_COUNT(counts.any_thread == 0);
  CHECK(f.trace_count() == 1);
  CHECK(max_error(host, [&](std::size_t i) { return std::tanh(xv[i] * yv[i]) + 1.0; }) < 1e-6);
}
