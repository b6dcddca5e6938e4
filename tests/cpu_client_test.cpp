// Tests of the CPU client: devices, memory spaces, and buffers with PJRT's host-buffer
// semantics, transfers and lifetimes.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/parallel.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "test_util.hpp"

namespace cpu_client_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

using PoolClient = cpu::Client<cpu::ThreadPool>;
using InlineClient = cpu::Client<cpu::InlineExecutor>;

template <class E = cpu::ThreadPool>
std::unique_ptr<cpu::Client<E>> make_client(int devices = 2, std::int64_t async_threshold = 64 * 1024) {
  cpu::ClientOptions options;
  options.device_count = devices;
  options.thread_count = 2;
  options.async_transfer_threshold_bytes = async_threshold;
  return cpu::Client<E>::create(options).value();
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

/// Host memory aligned to 64 bytes, so tests control exactly where zero-copy data starts.
struct AlignedHost {
  explicit AlignedHost(std::size_t n) : bytes(pjrt_lite::detail::allocate_aligned(n + 64)) {}
  template <class T>
  T* at(std::size_t byte_offset) {
    return reinterpret_cast<T*>(bytes.get() + byte_offset);
  }
  pjrt_lite::detail::AlignedBytes bytes;
};

template <class E>
Literal read(const cpu::Buffer<E>& buffer) {
  return buffer.to_literal().await().value();
}

}  // namespace

TEST_CASE("cpu client: devices, memory spaces and their descriptions") {
  auto client = make_client(3);
  CHECK(client->platform_name() == "cpu");
  CHECK(client->device_count() == 3);
  CHECK(client->addressable_device_count() == 3);
  CHECK(client->memory_spaces().size() == 9);
  for (int i = 0; i < 3; ++i) {
    cpu::Device<>* d = client->devices()[static_cast<std::size_t>(i)];
    CHECK(d->id() == i);
    CHECK(client->lookup_device(i).value() == d);
    CHECK(d->client() == client.get());
    CHECK(d->device_kind() == "cpu");
    CHECK(d->debug_string() == "cpu:" + std::to_string(i));
    CHECK(d->to_string() == "CpuDevice(id=" + std::to_string(i) + ")");
    CHECK(std::get<std::vector<std::int64_t>>(d->attributes().at("coords")) == std::vector<std::int64_t>{i});
    CHECK(std::get<std::int64_t>(d->attributes().at("executor_threads")) == 2);
    REQUIRE(d->memory_spaces().size() == 3);
    CHECK(d->default_memory_space().value()->kind() == "device");
    for (int k = 0; k < 3; ++k) {
      cpu::MemorySpace<>* m = d->memory_spaces()[static_cast<std::size_t>(k)];
      CHECK(m->kind() == cpu::kMemoryKinds[k]);
      CHECK(m->kind_id() == k);
      CHECK(m->id() == 3 * i + k);
      CHECK(m->devices().size() == 1);
      CHECK(m->devices()[0] == d);
      CHECK(d->memory_space_by_kind(m->kind()).value() == m);
    }
    CHECK(d->memory_spaces()[1]->debug_string() == "cpu:" + std::to_string(i) + "/pinned_host");
  }
  CHECK(client->memory_spaces()[4]->to_string() == "MemorySpace(id=4, kind=pinned_host, device=1)");
  CHECK(client->devices()[0]->memory_space_by_kind("hbm").status().code() == StatusCode::kNotFound);
  Status bad_id = client->lookup_device(3).status();
  CHECK(bad_id.code() == StatusCode::kInvalidArgument);
  CHECK(contains(bad_id.message(), "no device with id 3 (the client has 3 devices, ids 0..2)"));
}

TEST_CASE("cpu client: an idle thread pool sleeps instead of spinning") {
  // Workers poll for kSpinBeforeSleep after their last task, then sleep: once idle, the
  // process's CPU clock stands still while the wall clock runs. A worker that kept polling
  // would add the whole interval per worker.
  cpu::ThreadPool pool(3);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) pool.schedule([&ran] { ran.fetch_add(1); });
  while (ran.load() < 100) std::this_thread::yield();
  auto cpu_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 400x kSpinBeforeSleep
  const std::int64_t before = cpu_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::int64_t used = cpu_ns() - before;
  CAPTURE(used);
  CHECK(used < 30'000'000);  // a spinning worker alone would use 300 ms
}

TEST_CASE("cpu client: bad options") {
  cpu::ClientOptions zero;
  zero.device_count = 0;
  CHECK(contains(PoolClient::create(zero).status().message(), "device_count must be in [1, 1024], got 0"));
  cpu::ClientOptions threads;
  threads.thread_count = -1;
  CHECK(PoolClient::create(threads).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("cpu buffer: ImmutableOnlyDuringCall copies and calls on_done before returning") {
  auto client = make_client();
  std::vector<float> host = {1, 2, 3, 4, 5, 6};
  std::vector<std::int64_t> dims = {2, 3};
  bool done = false;
  auto buffer = client->buffer_from_host_buffer(bytes_of(host), DType::kF32, dims, std::nullopt,
                                                HostBufferSemantics::kImmutableOnlyDuringCall,
                                                [&] { done = true; }, client->devices()[1]);
  REQUIRE(buffer.ok());
  CHECK(done);
  host[0] = 100;  // the caller owns the data again: the buffer must not see this
  CHECK(buffer->get_ready_future().is_ready());
  CHECK(read(*buffer) == Literal::from_span<float>(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).value());
  CHECK(buffer->device() == client->devices()[1]);
  CHECK(buffer->memory_space() == client->devices()[1]->memory_spaces()[0]);
  CHECK(buffer->on_device_shape() == Shape(DType::kF32, {2, 3}));
  CHECK(buffer->on_device_size_in_bytes().value() == 24);
  CHECK(buffer->acquire_external_reference().value().data() != host.data());
}

TEST_CASE("cpu buffer: nullptr, or nothing, for the place is the first device's default memory space") {
  auto client = make_client();
  const std::vector<std::int32_t> host = {5, -6};
  const std::vector<std::int64_t> dims = {2};
  const Literal expected = Literal::vector<std::int32_t>({5, -6});
  cpu::MemorySpace<>* default_space = client->devices()[0]->default_memory_space().value();
  // A bare nullptr names neither a memory space nor a device: it means "the default".
  int done = 0;
  auto with_null = client->buffer_from_host_buffer(bytes_of(host), DType::kS32, dims, std::nullopt,
                                                   HostBufferSemantics::kImmutableOnlyDuringCall,
                                                   [&] { ++done; }, nullptr);
  REQUIRE(with_null.ok());
  CHECK(done == 1);
  CHECK(with_null->memory_space() == default_space);
  CHECK(read(*with_null) == expected);
  // Leaving the place out, and on_done too, means the same.
  auto without_place = client->buffer_from_host_buffer(bytes_of(host), DType::kS32, dims, std::nullopt,
                                                       HostBufferSemantics::kImmutableOnlyDuringCall);
  REQUIRE(without_place.ok());
  CHECK(without_place->memory_space() == default_space);
  CHECK(read(*without_place) == expected);
  // Typed null pointers still pick their overloads, with the same default.
  auto null_space = client->buffer_from_host_buffer(bytes_of(host), DType::kS32, dims, std::nullopt,
                                                    HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                                    static_cast<cpu::MemorySpace<>*>(nullptr));
  auto null_device = client->buffer_from_host_buffer(bytes_of(host), DType::kS32, dims, std::nullopt,
                                                     HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                                     static_cast<cpu::Device<>*>(nullptr));
  CHECK(null_space->memory_space() == default_space);
  CHECK(null_device->memory_space() == default_space);
  // Errors are the memory-space overload's, and on_done still runs once.
  done = 0;
  const std::vector<std::int64_t> wrong_dims = {3};
  auto bad = client->buffer_from_host_buffer(bytes_of(host), DType::kS32, wrong_dims, std::nullopt,
                                             HostBufferSemantics::kImmutableOnlyDuringCall, [&] { ++done; },
                                             nullptr);
  check_error(bad, StatusCode::kInvalidArgument, "8 bytes of data for s32[3], which needs 12");
  CHECK(done == 1);
}

TEST_CASE("cpu buffer: ImmutableUntilTransferCompletes copies on the pool, then on_done, then ready") {
  auto client = make_client(1, /*async_threshold=*/0);  // every transfer is asynchronous
  std::vector<std::int32_t> host(100000);
  std::iota(host.begin(), host.end(), 0);
  std::vector<std::int64_t> dims = {100000};
  std::atomic<bool> done{false};
  std::thread::id done_thread;
  auto buffer = client->buffer_from_host_buffer(
      bytes_of(host), DType::kS32, dims, std::nullopt,
      HostBufferSemantics::kImmutableUntilTransferCompletes,
      [&] {
        done_thread = std::this_thread::get_id();
        done = true;
      },
      static_cast<cpu::MemorySpace<>*>(nullptr));
  REQUIRE(buffer.ok());
  CHECK(buffer->get_ready_future().await().ok());
  CHECK(done);  // on_done runs before the ready future is fulfilled
  CHECK(done_thread != std::this_thread::get_id());
  Literal lit = read(*buffer);
  CHECK(std::equal(host.begin(), host.end(), lit.data<std::int32_t>().begin()));
}

TEST_CASE("cpu buffer: ImmutableZeroCopy aliases aligned dense data until released") {
  auto client = make_client();
  AlignedHost host(16);
  float* data = host.at<float>(0);
  for (int i = 0; i < 4; ++i) data[i] = static_cast<float>(i);
  std::vector<std::int64_t> dims = {4};
  int done = 0;
  auto buffer = client->buffer_from_host_buffer(std::as_bytes(std::span<const float>(data, 4)), DType::kF32,
                                                dims, std::nullopt, HostBufferSemantics::kImmutableZeroCopy,
                                                [&] { ++done; }, client->devices()[0]);
  REQUIRE(buffer.ok());
  CHECK(done == 0);
  auto ref = buffer->acquire_external_reference().value();
  CHECK(ref.data() == data);  // aliases, no copy
  data[2] = 42;               // visible through the buffer: it is the same memory
  CHECK(read(*buffer).get<float>({2}) == 42.0f);
  buffer->delete_buffer();
  CHECK(buffer->is_deleted());
  CHECK(done == 0);  // the external reference still holds the memory
  { auto drop = std::move(ref); }
  CHECK(done == 1);  // released exactly once
}

TEST_CASE("cpu buffer: MutableZeroCopy aliases and on_done runs when the buffer is destroyed") {
  auto client = make_client();
  AlignedHost host(64);
  auto* data = host.at<double>(0);
  std::fill(data, data + 8, 1.5);
  std::vector<std::int64_t> dims = {2, 4};
  int done = 0;
  {
    auto buffer = client->buffer_from_host_buffer(std::as_bytes(std::span<const double>(data, 8)),
                                                  DType::kF64, dims, std::nullopt,
                                                  HostBufferSemantics::kMutableZeroCopy, [&] { ++done; },
                                                  client->devices()[0]);
    REQUIRE(buffer.ok());
    CHECK(buffer->acquire_external_reference().value().data() == data);
    CHECK(done == 0);
  }
  CHECK(done == 1);
}

TEST_CASE("cpu buffer: zero-copy of unaligned or strided data copies instead") {
  auto client = make_client();
  AlignedHost host(64);
  auto* unaligned = host.at<std::int32_t>(4);  // 4 bytes past a 64-byte boundary
  for (int i = 0; i < 4; ++i) unaligned[i] = 10 + i;
  std::vector<std::int64_t> dims = {4};
  int done = 0;
  auto buffer = client->buffer_from_host_buffer(std::as_bytes(std::span<const std::int32_t>(unaligned, 4)),
                                                DType::kS32, dims, std::nullopt,
                                                HostBufferSemantics::kImmutableZeroCopy, [&] { ++done; },
                                                client->devices()[0]);
  REQUIRE(buffer.ok());
  CHECK(done == 1);  // copied (inline: small), so the caller's data is free at once
  CHECK(buffer->acquire_external_reference().value().data() != unaligned);
  unaligned[0] = -1;
  CHECK(read(*buffer) == Literal::vector<std::int32_t>({10, 11, 12, 13}));

  // Column-major data is not the default layout: copied and transposed.
  std::vector<std::int32_t> colmajor = {0, 10, 1, 11, 2, 12};
  std::vector<std::int64_t> dims2 = {2, 3}, strides = {4, 8};
  auto transposed = client->buffer_from_host_buffer(bytes_of(colmajor), DType::kS32, dims2,
                                                    std::span<const std::int64_t>(strides),
                                                    HostBufferSemantics::kMutableZeroCopy, nullptr,
                                                    client->devices()[0]);
  REQUIRE(transposed.ok());
  CHECK(transposed->acquire_external_reference().value().data() != colmajor.data());
  CHECK(read(*transposed) ==
        Literal::from_span<std::int32_t>(std::vector<std::int32_t>{0, 1, 2, 10, 11, 12}, {2, 3}).value());
}

TEST_CASE("cpu buffer: byte strides are honoured for every permutation of a rank-3 array") {
  auto client = make_client();
  std::vector<std::int64_t> dims = {2, 3, 4};
  std::vector<std::int64_t> perm = {0, 1, 2};
  do {
    std::vector<std::int64_t> strides(3);
    std::int64_t stride = 8;
    for (int k = 2; k >= 0; --k) {
      strides[perm[k]] = stride;
      stride *= dims[perm[k]];
    }
    std::vector<double> host(24);
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k)
          host[(i * strides[0] + j * strides[1] + k * strides[2]) / 8] = static_cast<double>(100 * i + 10 * j + k);
    auto buffer = client->buffer_from_host_buffer(bytes_of(host), DType::kF64, dims,
                                                  std::span<const std::int64_t>(strides),
                                                  HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                                  client->devices()[0]);
    REQUIRE(buffer.ok());
    Literal lit = read(*buffer);
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k) CHECK(lit.get<double>({i, j, k}) == 100 * i + 10 * j + k);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("cpu buffer: bad host buffers get a clear status and on_done still runs once") {
  auto client = make_client();
  auto other = make_client(1);
  std::vector<float> host(6, 1.0f);
  std::vector<std::int64_t> dims = {2, 3};
  int done = 0;
  auto put = [&](std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> d,
                 std::optional<std::span<const std::int64_t>> strides, cpu::MemorySpace<>* m) {
    return client->buffer_from_host_buffer(data, dtype, d, strides, HostBufferSemantics::kImmutableOnlyDuringCall,
                                           [&] { ++done; }, m);
  };
  cpu::MemorySpace<>* mine = client->memory_spaces()[0];

  Status size = put(bytes_of(host).first(20), DType::kF32, dims, std::nullopt, mine).status();
  CHECK(size.code() == StatusCode::kInvalidArgument);
  CHECK(contains(size.message(), "20 bytes of data for f32[2,3], which needs 24"));

  std::vector<std::int64_t> negative = {2, -3};
  CHECK(contains(put(bytes_of(host), DType::kF32, negative, std::nullopt, mine).status().message(),
                 "dimension 1 is negative (-3)"));
  CHECK(contains(put(bytes_of(host), static_cast<DType>(99), dims, std::nullopt, mine).status().message(),
                 "invalid dtype"));

  std::vector<std::int64_t> overlap = {4, 4};
  CHECK(contains(put(bytes_of(host), DType::kF32, dims, std::span<const std::int64_t>(overlap), mine)
                     .status()
                     .message(),
                 "overlap"));
  std::vector<std::int64_t> past = {16, 4};
  CHECK(contains(put(bytes_of(host), DType::kF32, dims, std::span<const std::int64_t>(past), mine)
                     .status()
                     .message(),
                 "but the data holds only 24 bytes"));

  Status foreign = put(bytes_of(host), DType::kF32, dims, std::nullopt, other->memory_spaces()[0]).status();
  CHECK(foreign.code() == StatusCode::kInvalidArgument);
  CHECK(contains(foreign.message(), "memory space cpu:0/device belongs to another client"));
  Status foreign_device = client
                              ->buffer_from_host_buffer(bytes_of(host), DType::kF32, dims, std::nullopt,
                                                        HostBufferSemantics::kImmutableOnlyDuringCall,
                                                        [&] { ++done; }, other->devices()[0])
                              .status();
  CHECK(contains(foreign_device.message(), "device cpu:0 belongs to another client"));
  CHECK(contains(put({}, DType::kF32, dims, std::nullopt, mine).status().message(), "data is null"));
  CHECK(done == 8);  // every failed call still gave the data back
}

TEST_CASE("cpu buffer: every use of a deleted buffer fails with FAILED_PRECONDITION") {
  auto client = make_client();
  auto buffer = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2, 3})).value();
  CHECK_FALSE(buffer.is_deleted());
  buffer.delete_buffer();
  buffer.delete_buffer();  // idempotent
  CHECK(buffer.is_deleted());
  auto expect_deleted = [](const Status& s, std::string_view what) {
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), what));
    CHECK(contains(s.message(), "buffer s64[3] on cpu:0/device has been deleted or donated"));
  };
  expect_deleted(buffer.to_literal().await().status(), "to_literal");
  std::int64_t dst = 0;
  expect_deleted(buffer.copy_raw_to_host(&dst, 0, 8).await(), "copy_raw_to_host");
  expect_deleted(buffer.copy_to_device(client->devices()[1]).status(), "copy_to_memory_space");
  expect_deleted(buffer.on_device_size_in_bytes().status(), "on_device_size_in_bytes");
  expect_deleted(buffer.acquire_external_reference().status(), "acquire_external_reference");
  CHECK(buffer.on_device_shape() == Shape(DType::kS64, {3}));  // metadata stays readable
}

TEST_CASE("cpu buffer: get_ready_future of a deleted or donated buffer is an error, as in PJRT") {
  // PJRT's GetReadyFuture() on a deleted or donated buffer returns an error future instead of
  // the definition event; here it is FAILED_PRECONDITION, like every use of such a buffer.
  auto client = make_client();
  auto buffer = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2, 3})).value();
  Future<void> before = buffer.get_ready_future();
  CHECK(before.await().ok());
  buffer.delete_buffer();
  Future<void> after = buffer.get_ready_future();
  REQUIRE(after.is_ready());
  CHECK(after.await().code() == StatusCode::kFailedPrecondition);
  CHECK(after.await().message() ==
        "get_ready_future: buffer s64[3] on cpu:0/device has been deleted or donated");
  CHECK(before.await().ok());  // a future taken earlier still says the contents were defined

  // Donated to an execution: the argument's future fails, the output's is ready.
  GraphBuilder b("double");
  Value x = b.parameter(Shape(DType::kF32, {2}));
  auto exe = client->compile(b.build({b.add(x, x)}).value()).value();
  auto arg = client->buffer_from_literal(Literal::vector<float>({1.5f, -2})).value();
  cpu::Buffer<>* args[] = {&arg};
  auto out = exe.execute_sharded(args, client->devices()[0], {.donated_arguments = {0}}).value();
  CHECK(out[0].get_ready_future().await().ok());
  CHECK(read(out[0]) == Literal::vector<float>({3, -4}));
  CHECK(arg.get_ready_future().await().code() == StatusCode::kFailedPrecondition);
  CHECK(contains(arg.get_ready_future().await().message(), "has been deleted or donated"));
}

TEST_CASE("cpu client: the compile cache keeps the most recently used programs") {
  cpu::ClientOptions options;
  options.compile_cache_capacity = 2;
  auto client = cpu::Client<>::create(options).value();
  // Programs y = x * k that differ only in the constant k, so each is its own cache entry.
  auto scale = [](float k) {
    GraphBuilder b(str_cat("scale", k));
    Value x = b.parameter(Shape(DType::kF32, {2}));
    return b.build({b.multiply(x, b.broadcast_in_dim(b.constant(k), {2}, {}))}).value();
  };
  auto run = [&](cpu::LoadedExecutable<cpu::ThreadPool>& exe) {
    auto in = client->buffer_from_literal(Literal::vector<float>({1, -2})).value();
    cpu::Buffer<>* args[] = {&in};
    return read(exe.execute_sharded(args, client->devices()[0]).value()[0]);
  };
  auto stats = [&] { return client->compile_cache_statistics(); };
  auto one = client->compile(scale(1)).value();
  auto two = client->compile(scale(2)).value();
  auto three = client->compile(scale(3)).value();  // the cache holds 2 and 3; 1 was dropped
  CHECK(stats() == CacheStats{.hits = 0, .misses = 3, .evictions = 1, .size = 2, .capacity = 2});
  CHECK(client->compile(scale(3)).ok());  // a hit, and 3 is now the most recently used
  CHECK(client->compile(scale(1)).ok());  // compiled again; 2, the least recently used, goes
  CHECK(stats() == CacheStats{.hits = 1, .misses = 4, .evictions = 2, .size = 2, .capacity = 2});
  CHECK(client->compile(scale(3)).ok());
  CHECK(stats().hits == 2);
  CHECK(client->compile_cache_stats() == std::pair<std::int64_t, std::int64_t>{2, 4});
  // Executables outlive their cache entries: y = k * x by the closed form.
  CHECK(run(one) == Literal::vector<float>({1, -2}));
  CHECK(run(two) == Literal::vector<float>({2, -4}));
  CHECK(run(three) == Literal::vector<float>({3, -6}));
  client->clear_compile_cache();
  CHECK(stats() == CacheStats{.hits = 2, .misses = 4, .evictions = 2, .size = 0, .capacity = 2});
  CHECK(run(two) == Literal::vector<float>({2, -4}));
  CHECK(client->compile(scale(3)).ok());
  CHECK(stats().misses == 5);

  // Capacity 0: nothing is kept, every compile compiles.
  options.compile_cache_capacity = 0;
  auto uncached = cpu::Client<>::create(options).value();
  CHECK(uncached->compile(scale(1)).ok());
  CHECK(uncached->compile(scale(1)).ok());
  CHECK(uncached->compile_cache_statistics() ==
        CacheStats{.hits = 0, .misses = 2, .evictions = 0, .size = 0, .capacity = 0});
  // The default keeps 256.
  CHECK(make_client()->compile_cache_statistics().capacity == 256);
}

TEST_CASE("cpu client: many distinct programs from many threads stay within the cache's bound") {
  cpu::ClientOptions options;
  options.compile_cache_capacity = 3;
  options.thread_count = 2;
  auto client = cpu::Client<>::create(options).value();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const float k = static_cast<float>((t * 5 + i) % 7);  // 7 programs, some repeated
        GraphBuilder b("scale");
        Value x = b.parameter(Shape(DType::kF32, {1}));
        auto exe = client->compile(b.build({b.multiply(x, b.broadcast_in_dim(b.constant(k), {1}, {}))}).value());
        if (!exe.ok()) { ++failures; continue; }
        auto in = client->buffer_from_literal(Literal::vector<float>({2})).value();
        cpu::Buffer<>* args[] = {&in};
        auto out = exe->execute_sharded(args, client->devices()[0]);
        if (!out.ok() || read((*out)[0]) != Literal::vector<float>({2 * k})) ++failures;
        if (client->compile_cache_statistics().size > 3) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  const CacheStats s = client->compile_cache_statistics();
  CHECK(s.hits + s.misses == 48);
  CHECK(s.size == 3);
  // Every compile past the third pushed one out, except when two threads compiled one program
  // at once (the second finds it cached and adds nothing).
  CHECK(s.evictions >= 1);
  CHECK(s.evictions <= s.misses - 3);
}

TEST_CASE("cpu buffer: copy_raw_to_host copies a byte range and rejects ranges outside") {
  auto client = make_client();
  auto buffer = client->buffer_from_literal(Literal::vector<std::int16_t>({1, 2, 3, 4})).value();
  std::int16_t two[2] = {0, 0};
  CHECK(buffer.copy_raw_to_host(two, 4, 4).await().ok());
  CHECK(two[0] == 3);
  CHECK(two[1] == 4);
  for (auto [offset, size] : {std::pair<std::int64_t, std::int64_t>{6, 4}, {-1, 2}, {0, -2}, {9, 0}}) {
    Status s = buffer.copy_raw_to_host(two, offset, size).await();
    CHECK(s.code() == StatusCode::kOutOfRange);
    CHECK(contains(s.message(), "outside its 8 bytes"));
  }
  CHECK(buffer.copy_raw_to_host(nullptr, 0, 2).await().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("cpu buffer: a copy to the host that a worker ran lets go of the memory before its future is ready") {
  // A control loop reads its buffer back and then writes the next input into it in place: the
  // write must find the memory free once the read's future is ready, whichever thread ran it.
  // The copies are above the client's threshold (0 bytes), so the pool's workers run them.
  auto client = make_client(1, 0);
  constexpr std::int64_t kN = 1024;
  std::vector<float> host(kN), back(kN);
  for (std::int64_t i = 0; i < kN; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>(i);
  auto buffer = client->buffer_from_host_buffer(std::span<const float>(host), std::vector<std::int64_t>{kN}).value();
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    const bool raw = round % 2 == 0;
    if (raw) {
      REQUIRE(buffer.copy_raw_to_host(back.data(), 0, kN * 4).await().ok());
    } else {
      Literal l = buffer.to_literal().await().value();
      std::memcpy(back.data(), l.untyped_data(), static_cast<std::size_t>(kN * 4));
    }
    CHECK(back[static_cast<std::size_t>(round % kN)] == static_cast<float>(round % kN + round));
    for (float& v : host) v += 1.0f;
    const Status written = buffer.copy_raw_from_host(host.data(), 0, kN * 4);
    REQUIRE_MESSAGE(written.ok(), written.to_string());
  }
}

TEST_CASE("cpu buffer: copy_raw_from_host overwrites in place, only memory nothing else uses") {
  auto client = make_client();
  auto buffer = client->buffer_from_literal(Literal::vector<std::int16_t>({1, 2, 3, 4})).value();
  const std::int16_t two[2] = {-7, 9};
  REQUIRE(buffer.copy_raw_from_host(two, 2, 4).ok());
  CHECK(read(buffer) == Literal::vector<std::int16_t>({1, -7, 9, 4}));
  CHECK(buffer.copy_raw_from_host(two, 8, 0).ok());  // an empty range at the end
  for (auto [offset, size] : {std::pair<std::int64_t, std::int64_t>{6, 4}, {-1, 2}, {0, -2}, {9, 0}}) {
    Status s = buffer.copy_raw_from_host(two, offset, size);
    CHECK(s.code() == StatusCode::kOutOfRange);
    CHECK(contains(s.message(), "outside its 8 bytes"));
  }
  CHECK(buffer.copy_raw_from_host(nullptr, 0, 2).code() == StatusCode::kInvalidArgument);
  CHECK(read(buffer) == Literal::vector<std::int16_t>({1, -7, 9, 4}));  // refusals wrote nothing

  SUBCASE("shared memory is refused until the other user lets go") {
    StatusOr<cpu::ExternalReference> external = buffer.acquire_external_reference();
    REQUIRE(external.ok());
    Status s = buffer.copy_raw_from_host(two, 0, 4);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), "still shared by 1 pending operation(s), buffer(s) or external reference(s)"));
    external = invalid_argument_error("dropped");
    CHECK(buffer.copy_raw_from_host(two, 0, 4).ok());
    CHECK(read(buffer) == Literal::vector<std::int16_t>({-7, 9, 9, 4}));
  }
  SUBCASE("a pending read holds the memory, and the write never blocks on it") {
    auto hold = cpu::detail::BufferAccess::acquire(buffer, "test").value();
    auto [promise, ready] = make_promise<void>();
    auto pending = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0], Shape(DType::kS16, {4}),
                                       hold.memory, ready);
    Future<Literal> later = pending.to_literal();
    hold = {};
    CHECK(buffer.copy_raw_from_host(two, 0, 4).code() == StatusCode::kFailedPrecondition);
    promise.set_value();
    CHECK(later.await().value() == Literal::vector<std::int16_t>({1, -7, 9, 4}));  // read before any write
  }
  SUBCASE("a buffer whose contents are not ready, or failed, is refused") {
    auto [promise, ready] = make_promise<void>();
    auto undefined = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0], Shape(DType::kF32, {}),
                                         cpu::detail::DeviceMemory::allocate(4), ready);
    const float one = 1;
    Status s = undefined.copy_raw_from_host(&one, 0, 4);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), "is not ready yet"));
    promise.set_error(internal_error("kernel exploded"));
    s = undefined.copy_raw_from_host(&one, 0, 4);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), "kernel exploded"));
  }
  SUBCASE("read-only zero-copy views and deleted buffers are refused") {
    AlignedHost host(16);
    std::fill(host.at<float>(0), host.at<float>(0) + 4, 2.0f);
    auto view = client->buffer_from_host_buffer(std::as_bytes(std::span<const float>(host.at<float>(0), 4)),
                                                DType::kF32, std::vector<std::int64_t>{4}, std::nullopt,
                                                HostBufferSemantics::kImmutableZeroCopy, nullptr,
                                                client->devices()[0]);
    REQUIRE(view.ok());
    const float one = 1;
    Status s = view->copy_raw_from_host(&one, 0, 4);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), "read-only view of host memory"));
    CHECK(host.at<float>(0)[0] == 2.0f);
    buffer.delete_buffer();
    s = buffer.copy_raw_from_host(two, 0, 4);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(contains(s.message(), "copy_raw_from_host: buffer s16[4]"));
  }
}

TEST_CASE("cpu buffer: copies between devices and memory spaces") {
  auto client = make_client(2, /*async_threshold=*/0);
  auto other = make_client(1);
  Literal value = Literal::from_span<float>(std::vector<float>{1, -2, 3.5f, 0}, {2, 2}).value();
  auto source = client->buffer_from_literal(value).value();
  auto on_device1 = source.copy_to_device(client->devices()[1]).value();
  CHECK(on_device1.device() == client->devices()[1]);
  CHECK(on_device1.memory_space()->kind() == "device");
  CHECK(read(on_device1) == value);
  cpu::MemorySpace<>* pinned = client->devices()[0]->memory_space_by_kind("pinned_host").value();
  auto on_pinned = on_device1.copy_to_memory_space(pinned).value();
  CHECK(on_pinned.memory_space() == pinned);
  CHECK(on_pinned.device() == client->devices()[0]);
  CHECK(read(on_pinned) == value);
  CHECK(contains(source.copy_to_device(other->devices()[0]).status().message(), "belongs to another client"));
  CHECK(contains(source.copy_to_memory_space(other->memory_spaces()[1]).status().message(),
                 "memory space cpu:0/pinned_host belongs to another client"));
}

TEST_CASE("cpu buffer: memory lives until pending uses finish, then on_done runs") {
  auto client = make_client();
  AlignedHost host(16);
  float* data = host.at<float>(0);
  std::fill(data, data + 4, 7.0f);
  std::atomic<int> released{0};
  auto zero_copy = client->buffer_from_host_buffer(std::as_bytes(std::span<const float>(data, 4)), DType::kF32,
                                                   std::vector<std::int64_t>{4}, std::nullopt,
                                                   HostBufferSemantics::kImmutableZeroCopy, [&] { ++released; },
                                                   client->devices()[0]);
  REQUIRE(zero_copy.ok());
  // A buffer over the same memory whose contents are not defined until `promise` is set: a
  // stand-in for an execution still writing it.
  auto hold = cpu::detail::BufferAccess::acquire(*zero_copy, "test").value();
  auto [promise, ready] = make_promise<void>();
  auto pending = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0], Shape(DType::kF32, {4}),
                                     std::move(hold.memory), ready);
  zero_copy->delete_buffer();
  Future<Literal> literal = pending.to_literal();
  pending.delete_buffer();
  CHECK_FALSE(literal.is_ready());
  CHECK(released == 0);  // the pending read still holds the memory
  promise.set_value();
  CHECK(literal.await().value() == Literal::vector<float>({7, 7, 7, 7}));
  CHECK(released == 1);
}

TEST_CASE("cpu buffer: an error in a buffer's definition reaches every use") {
  auto client = make_client(2, /*async_threshold=*/0);
  auto [promise, ready] = make_promise<void>();
  auto memory = cpu::detail::DeviceMemory::allocate(8);
  auto failed = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0], Shape(DType::kF64, {}),
                                    memory, ready);
  Future<Literal> literal = failed.to_literal();
  auto copy = failed.copy_to_device(client->devices()[1]).value();
  promise.set_error(internal_error("kernel exploded"));
  CHECK(literal.await().status().message() == "kernel exploded");
  CHECK(copy.get_ready_future().await().message() == "kernel exploded");
  CHECK(copy.to_literal().await().status().message() == "kernel exploded");
}

TEST_CASE("cpu buffer: uninitialized buffers and large asynchronous reads") {
  auto client = make_client(1, /*async_threshold=*/1024);
  auto buffer = client->create_uninitialized_buffer(Shape(DType::kU8, {4096}), nullptr).value();
  CHECK(buffer.on_device_size_in_bytes().value() == 4096);
  auto ref = buffer.acquire_external_reference().value();
  std::memset(ref.data(), 0xAB, ref.size());
  Literal lit = read(buffer);  // 4096 bytes >= 1024: copied on the pool
  CHECK(std::all_of(lit.data<std::uint8_t>().begin(), lit.data<std::uint8_t>().end(),
                    [](std::uint8_t b) { return b == 0xAB; }));
  Status negative = client->create_uninitialized_buffer(Shape(DType::kF32, {-1}), nullptr).status();
  CHECK(negative.code() == StatusCode::kInvalidArgument);
  CHECK(contains(negative.message(), "create_uninitialized_buffer: dimension 0 is negative (-1)"));
  // A layout other than row-major is the buffer's own (executables compiled with
  // argument_layouts take it).
  std::vector<std::int64_t> dims = {2, 3}, column_major = {1, 0};
  auto laid = client->create_uninitialized_buffer(Shape::make(DType::kF32, dims, column_major).value(), nullptr);
  REQUIRE(laid.ok());
  CHECK(laid->minor_to_major() == std::vector<std::int64_t>{0, 1});
  CHECK(laid->on_device_size_in_bytes().value() == 24);
}

TEST_CASE("cpu buffer: an inline client transfers on the caller's thread") {
  auto client = make_client<cpu::InlineExecutor>(1, /*async_threshold=*/0);
  std::vector<double> host(1000, 2.5);
  std::thread::id done_thread;
  auto buffer = client->buffer_from_host_buffer(bytes_of(host), DType::kF64, std::vector<std::int64_t>{1000},
                                                std::nullopt, HostBufferSemantics::kImmutableUntilTransferCompletes,
                                                [&] { done_thread = std::this_thread::get_id(); },
                                                client->devices()[0]);
  REQUIRE(buffer.ok());
  CHECK(buffer->get_ready_future().is_ready());
  CHECK(done_thread == std::this_thread::get_id());
  Future<Literal> lit = buffer->to_literal();
  CHECK(lit.is_ready());
  CHECK(lit.await().value().get<double>({999}) == 2.5);
}

TEST_CASE("cpu buffer: concurrent transfers, reads and deletes from many threads") {
  auto client = make_client(2, /*async_threshold=*/256);
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::vector<std::int32_t> host(64 + 8 * round, t * 1000 + round);
        auto buffer = client->buffer_from_host_buffer(
            bytes_of(host), DType::kS32, std::vector<std::int64_t>{static_cast<std::int64_t>(host.size())},
            std::nullopt, HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr,
            client->devices()[static_cast<std::size_t>(t % 2)]);
        if (!buffer.ok()) { ++failures; continue; }
        auto moved = buffer->copy_to_device(client->devices()[static_cast<std::size_t>((t + 1) % 2)]);
        Future<Literal> a = buffer->to_literal();
        buffer->delete_buffer();  // the pending read and copy keep the memory
        if (!moved.ok()) { ++failures; continue; }
        Future<Literal> b = moved->to_literal();
        const Literal& la = a.await().value();
        const Literal& lb = b.await().value();
        if (!(la == lb) || la.data<std::int32_t>()[0] != t * 1000 + round) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
}

TEST_CASE("cpu client: the split governor backs off after a contended loop and recovers") {
  using cpu::detail::SplitGovernor;
  SplitGovernor g;
  CHECK(g.may_split());
  g.record(10'000, 5'000);  // the helpers kept up: nothing changes
  CHECK(g.skipping() == 0);
  g.record(10'000, SplitGovernor::kWaitFactor * 10'000 + SplitGovernor::kSlackNs + 1);  // contended
  CHECK(g.skipping() == 16);
  int refused = 0;
  while (!g.may_split()) ++refused;
  CHECK(refused == 16);
  g.record(0, 10'000'000);  // contended again: the stretch doubles
  CHECK(g.skipping() == 32);
  for (int i = 0; i < 20; ++i) g.record(0, 10'000'000);
  CHECK(g.skipping() == SplitGovernor::kMaxSkip);
  // Loops whose helpers keep up halve the stretch the next contended loop starts from.
  while (!g.may_split()) {
  }
  for (int i = 0; i < 12; ++i) g.record(10'000, 0);
  g.record(0, 10'000'000);
  CHECK(g.skipping() == 16);
}

TEST_CASE("cpu client: a parallel loop whose helper is held up makes the next loops run on the caller") {
  // The worker's first block stands for a worker the OS descheduled: it takes 100 ms, while
  // the caller's blocks take nothing.
  cpu::ThreadPool pool(1);
  std::atomic<bool> helper_started{false};
  auto held_up = [&](std::int64_t, std::int64_t, int worker) {
    if (worker == 0) {
      for (int i = 0; i < 10'000 && !helper_started.load(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
      return;
    }
    if (!helper_started.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  cpu::detail::parallel_for(&pool, 2, 64, 1, held_up);
  REQUIRE_MESSAGE(helper_started.load(), "the worker never took a block");
  CHECK(pool.split_governor().skipping() > 0);
  // The next loop runs every block on the caller (worker 0).
  std::atomic<int> off_caller{0};
  auto count = [&](std::int64_t, std::int64_t, int worker) { off_caller += worker != 0; };
  cpu::detail::parallel_for(&pool, 2, 64, 1, count);
  CHECK(off_caller.load() == 0);
}

namespace {

/// A RunContext whose "parallel" runs the loop in two halves on the caller and reports whether
/// it split (a pool's governor may turn a split down): a stand-in for a pool.
struct FakeSplit {
  static inline bool helps = true;
  static bool parallel(void*, int, std::int64_t n, std::int64_t, cpu::detail::RangeFn fn) {
    if (!helps) {
      fn(0, n, 0);
      return false;
    }
    fn(0, n / 2, 0);
    fn(n / 2, n, 1);
    return true;
  }
  static cpu::detail::RunContext context(int workers) {
    return {nullptr, nullptr, nullptr, workers, &parallel, nullptr, nullptr, nullptr};
  }
};

}  // namespace

TEST_CASE("cpu client: a kernel's loop tries both ways, then runs the one its own runs found faster") {
  using cpu::detail::SplitLearner;
  constexpr std::int64_t kN = 1000;
  int split_runs = 0, alone_runs = 0;
  auto loop = [&](std::int64_t begin, std::int64_t end, int) {
    if (begin == 0) ++(end == kN ? alone_runs : split_runs);
  };
  const auto ctx = FakeSplit::context(2);
  FakeSplit::helps = true;

  SUBCASE("the warm-up runs each way kWarmup times in a row, and each run is timed as the way it went") {
    SplitLearner learner;
    for (std::uint32_t i = 0; i < SplitLearner::kWarmup; ++i) learner.run(ctx, kN, 10, loop);
    CHECK(split_runs == static_cast<int>(SplitLearner::kWarmup));
    CHECK(alone_runs == 0);
    for (std::uint32_t i = 0; i < SplitLearner::kWarmup; ++i) learner.run(ctx, kN, 10, loop);
    CHECK(split_runs == static_cast<int>(SplitLearner::kWarmup));
    CHECK(alone_runs == static_cast<int>(SplitLearner::kWarmup));
    CHECK(learner.runs(true) == SplitLearner::kWarmup);
    CHECK(learner.runs(false) == SplitLearner::kWarmup);
  }
  SUBCASE("a split the pool turned down ran alone, and counts as such") {
    FakeSplit::helps = false;
    SplitLearner learner;
    for (int i = 0; i < 6; ++i) learner.run(ctx, kN, 10, loop);
    CHECK(alone_runs == 6);
    CHECK(learner.runs(true) == 0);
    CHECK(learner.runs(false) == 6);
    FakeSplit::helps = true;
  }
  SUBCASE("one worker, or a loop of one block, never times or splits") {
    SplitLearner learner;
    learner.run(FakeSplit::context(1), kN, 10, loop);
    learner.run(ctx, kN, kN, loop);
    CHECK(alone_runs == 2);
    CHECK(learner.runs(false) + learner.runs(true) == 0);
  }
}

TEST_CASE("cpu client: a split learner follows the times it is given: faster way, explorations, changes of load") {
  // The decision apart from the clock: each run takes the time the test says for the way it
  // went, so the counts are exact on any machine at any load.
  using cpu::detail::SplitLearner;
  constexpr std::int64_t kMs = 1'000'000;
  int split_runs = 0, alone_runs = 0;
  const auto runs = [&](const SplitLearner& learner, std::uint32_t times, std::int64_t split_ns, std::int64_t alone_ns) {
    split_runs = alone_runs = 0;
    for (std::uint32_t i = 0; i < times; ++i) {
      const bool split = learner.choose();
      ++(split ? split_runs : alone_runs);
      learner.record(split, split ? split_ns : alone_ns);
    }
  };
  constexpr auto kEvery = static_cast<int>(SplitLearner::kExploreEvery);
  constexpr auto kExplore = static_cast<int>(SplitLearner::kExploreRuns);
  constexpr auto kWarmup = static_cast<int>(SplitLearner::kWarmup);

  constexpr auto kWindow = static_cast<int>(SplitLearner::kWindow);

  // Times a tenth apart or closer keep the explorations kExploreEvery runs apart (their extra
  // time: kExploreRuns * 0.1 of a run, under 1/kExploreShare of kExploreEvery runs).
  SUBCASE("splitting is slower: the caller runs the loop but for kExploreRuns splits every kExploreEvery runs") {
    SplitLearner learner;
    runs(learner, 2 * kWarmup, 11 * kMs, 10 * kMs);
    CHECK(split_runs == kWarmup);
    CHECK(learner.median_ns(true) == 11 * kMs);
    CHECK(learner.median_ns(false) == 10 * kMs);
    runs(learner, 2 * kEvery, 11 * kMs, 10 * kMs);
    CHECK(split_runs == 2 * kExplore);
    CHECK(alone_runs == 2 * (kEvery - kExplore));
  }
  SUBCASE("splitting is faster: the loop splits but for kExploreRuns runs alone every kExploreEvery") {
    SplitLearner learner;
    runs(learner, 2 * kWarmup + 2 * kEvery, 10 * kMs, 11 * kMs);
    CHECK(alone_runs == kWarmup + 2 * kExplore);
    CHECK(split_runs == kWarmup + 2 * (kEvery - kExplore));
  }
  SUBCASE("each way is judged by the median of its last kWindow runs, the lower of the middle two") {
    SplitLearner learner;
    // Times in ms of a way's runs, and its median after each: the lower of the middle two.
    const std::int64_t times[] = {9, 2, 7, 8, 1, 1, 6, 3, 4, 5};
    const std::int64_t medians[] = {9, 2, 7, 7, 7, 2, 6, 3, 3, 4};
    for (std::size_t i = 0; i < std::size(times); ++i) {
      learner.record(true, times[i] * kMs);
      CHECK(learner.median_ns(true) == medians[i] * kMs);
      CHECK(learner.median_ns(false) == 0);
    }
    static_assert(std::size(times) > SplitLearner::kWindow, "the last runs push the first out of the window");
  }
  SUBCASE("occasional slow runs of the faster way never turn the decision") {
    // Splitting takes 10 ms against the caller's 11, but every third split run the OS
    // stretches to 500 ms: a third of the window is slow, the median is not, and the loop
    // keeps splitting.
    SplitLearner learner;
    std::uint32_t split_seen = 0;
    split_runs = alone_runs = 0;
    for (int i = 0; i < 2 * kWarmup + 4 * kEvery; ++i) {
      const bool split = learner.choose();
      ++(split ? split_runs : alone_runs);
      learner.record(split, !split ? 11 * kMs : ++split_seen % 3 == 0 ? 500 * kMs : 10 * kMs);
    }
    CHECK(alone_runs == kWarmup + 4 * kExplore);
    CHECK(learner.median_ns(true) == 10 * kMs);
  }
  SUBCASE("a lasting slowdown turns the decision once it fills half the window") {
    SplitLearner learner;
    runs(learner, 2 * kWarmup, 2 * kMs, 10 * kMs);
    learner.record(true, 8 * kMs);  // one slow split run leaves the median alone
    CHECK(learner.median_ns(true) == 2 * kMs);
    // The machine got busy: splitting now takes 11 ms against the caller's 10. The window holds
    // the warm-up's four 2s, the 8 and then the slow runs; the fifth slow run leaves three
    // numbers below 10 ms of the last eight, and from then on the caller runs the loop but for
    // the explorations, every kExploreEvery runs now that the ways are close.
    runs(learner, kEvery, 11 * kMs, 10 * kMs);
    CHECK(split_runs == kWindow / 2 + 1 + kExplore);
    CHECK(learner.median_ns(true) == 11 * kMs);
  }
  SUBCASE("a faster way takes over within one exploration") {
    SplitLearner learner;
    runs(learner, 2 * kWarmup, 5 * kMs, 0);
    // Splitting becomes the faster way (and the caller slower): the caller's median turns
    // after five slow runs, but splitting shows only when it is tried; its exploration's four
    // runs make half its window, and the loop splits from then on.
    runs(learner, kEvery + kEvery / 2, 0, 5 * kMs);
    CHECK(split_runs == kExplore + kEvery / 2);
    CHECK(alone_runs == kEvery - kExplore);
    CHECK(learner.median_ns(true) == 0);
  }
  SUBCASE("explorations come less often the further apart the ways are, so they cost about 1/kExploreShare") {
    // The period from the closed form: an exploration's runs each take (other - chosen)
    // longer, and kExploreShare times that extra time over kExploreRuns runs spreads over the
    // period's runs of the chosen way.
    constexpr auto kShare = SplitLearner::kExploreShare;
    const auto closed_form = [&](std::int64_t chosen, std::int64_t other) {
      return static_cast<int>(kExplore * kShare * (other - chosen) / chosen);
    };
    CHECK(SplitLearner::explore_every(kMs, 5 * kMs) == 1600u);
    CHECK(SplitLearner::explore_every(4 * kMs, 7 * kMs) == static_cast<std::uint32_t>(closed_form(4 * kMs, 7 * kMs)));
    CHECK(SplitLearner::explore_every(10 * kMs, 11 * kMs) == SplitLearner::kExploreEvery);
    CHECK(SplitLearner::explore_every(10 * kMs, 9 * kMs) == SplitLearner::kExploreEvery);
    CHECK(SplitLearner::explore_every(kMs, 1000 * kMs) == SplitLearner::kMaxExploreEvery);
    CHECK(SplitLearner::explore_every(0, kMs) == SplitLearner::kMaxExploreEvery);

    SplitLearner learner;
    runs(learner, 2 * kWarmup, 5 * kMs, kMs);  // the caller is five times faster
    runs(learner, 3 * 1600, 5 * kMs, kMs);
    CHECK(split_runs == 3 * kExplore);
    CHECK(alone_runs == 3 * (1600 - kExplore));
    // The same loop splitting five times faster explores the caller as rarely.
    SplitLearner splitting;
    runs(splitting, 2 * kWarmup + 2 * 1600, kMs, 5 * kMs);
    CHECK(alone_runs == kWarmup + 2 * kExplore);
    // The caller's time nears the other way's: the next exploration comes kExploreEvery runs
    // after the last, however far apart they were before.
    runs(learner, 1000, 5 * kMs, 5 * kMs - kMs / 10);
    CHECK(split_runs == 1000 / kEvery * kExplore);
  }
  SUBCASE("an exploration's cost is the other way's mean time but its longest run") {
    // Split runs alternate 1 and 9 ms (median 1, the lower of the middle two; mean without the
    // longest run 3.7 ms over the warm-up's four, 4.4 over eight) against the caller's 1 ms:
    // the caller runs the loop and explores after about 1,070 and then 1,370 runs (by the
    // median it would every 128).
    SplitLearner learner;
    std::uint32_t split_seen = 0;
    split_runs = alone_runs = 0;
    for (int i = 0; i < 2 * kWarmup + 2 * 1600; ++i) {
      const bool split = learner.choose();
      ++(split ? split_runs : alone_runs);
      learner.record(split, !split ? kMs : ++split_seen % 2 == 0 ? 9 * kMs : kMs);
    }
    CHECK(learner.median_ns(true) == kMs);
    CHECK(split_runs == kWarmup + 2 * kExplore);
    // One run of 1,000 s (a first run's page faults, magnified) spaces them no further: splits
    // of 2 ms against the caller's 1.9 are explored every kExploreEvery runs.
    SplitLearner faulted;
    faulted.record(true, 1000 * 1000 * kMs);
    for (int i = 0; i < 7; ++i) faulted.record(true, 2 * kMs);
    for (int i = 0; i < kWarmup; ++i) faulted.record(false, 19 * kMs / 10);
    runs(faulted, 2 * kEvery, 2 * kMs, 19 * kMs / 10);
    CHECK(split_runs == 2 * kExplore);
  }
}

}  // namespace cpu_client_test
