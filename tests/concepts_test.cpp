// The concepts, checked at compile time: every static_assert is a test that fails the build.
// Positive cases: the CPU backend and minimal user-written types that opt in. Negative cases:
// look-alikes that lack the tag, and opted-in types missing one piece of the contract.
#include <doctest/doctest.h>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/cpu.hpp"

namespace concepts_test {

using namespace pjrt_lite;

namespace user {

// A minimal backend written by a user: every type opts in through its tag.
struct Device;
struct MemorySpace {
  using memory_space_concept = memory_space_tag;
  int id() const { return 0; }
  std::string_view kind() const { return "device"; }
  int kind_id() const { return 0; }
  std::span<Device* const> devices() const { return {}; }
  std::string debug_string() const { return "m"; }
  std::string to_string() const { return "m"; }
};
struct Device {
  using device_concept = device_tag;
  int id() const { return 0; }
  int process_index() const { return 0; }
  int local_hardware_id() const { return 0; }
  std::string_view device_kind() const { return "toy"; }
  bool is_addressable() const { return true; }
  const DeviceAttributeMap& attributes() const { return attrs; }
  std::string debug_string() const { return "toy:0"; }
  std::string to_string() const { return "Toy(0)"; }
  std::span<MemorySpace* const> memory_spaces() const { return {}; }
  StatusOr<MemorySpace*> default_memory_space() const { return unimplemented_error("none"); }
  DeviceAttributeMap attrs;
};
struct Buffer {
  using buffer_concept = buffer_tag;
  const Shape& on_device_shape() const { return shape; }
  DType dtype() const { return shape.dtype(); }
  std::span<const std::int64_t> dims() const { return shape.dims(); }
  StatusOr<std::int64_t> on_device_size_in_bytes() const { return shape.byte_size(); }
  Device* device() const { return nullptr; }
  MemorySpace* memory_space() const { return nullptr; }
  bool is_deleted() const { return false; }
  void delete_buffer() {}
  Future<void> get_ready_future() const { return make_ready_future(); }
  Future<Literal> to_literal() const { return make_ready_future(Literal(shape)); }
  Future<void> copy_raw_to_host(void*, std::int64_t, std::int64_t) const { return make_ready_future(); }
  Shape shape;
};
struct Executable {
  using loaded_executable_concept = loaded_executable_tag;
  using buffer_type = Buffer;
  using device_type = Device;
  std::string_view name() const { return "toy"; }
  std::span<Device* const> addressable_devices() const { return {}; }
  StatusOr<std::vector<std::vector<Buffer>>> execute(std::span<const std::vector<Buffer*>>, const ExecuteOptions&) {
    return std::vector<std::vector<Buffer>>{};
  }
  StatusOr<std::vector<Buffer>> execute_sharded(std::span<Buffer* const>, Device*, const ExecuteOptions&) {
    return std::vector<Buffer>{};
  }
  StatusOr<std::vector<Buffer>> execute_portable(std::span<Buffer* const>, Device*, const ExecuteOptions&) {
    return std::vector<Buffer>{};
  }
  void delete_executable() {}
  bool is_deleted() const { return false; }
};

// Has every member of an executable, but never opted in.
struct ExecutableLookAlike : Executable {
  struct loaded_executable_concept {};  // a tag that is not loaded_executable_tag
};
// Opted in, but cannot run on a given device.
struct ExecutableWithoutSharded {
  using loaded_executable_concept = loaded_executable_tag;
  using buffer_type = Buffer;
  using device_type = Device;
  std::string_view name() const { return "toy"; }
  std::span<Device* const> addressable_devices() const { return {}; }
  StatusOr<std::vector<std::vector<Buffer>>> execute(std::span<const std::vector<Buffer*>>, const ExecuteOptions&);
  void delete_executable() {}
  bool is_deleted() const { return false; }
};
// A buffer that throws away errors: to_literal returns a plain Literal.
struct BufferWithoutFuture : Buffer {
  Literal to_literal() const { return Literal(shape); }
};
// A buffer that forgot to opt in.
struct UntaggedBuffer : Buffer {
  using buffer_concept = void;
};
struct DeviceWithoutMemory {
  using device_concept = device_tag;
  int id() const { return 0; }
};
struct ExecutorWithoutTag {
  void schedule(UniqueFunction<void()> t) { t(); }
  int num_threads() const { return 0; }
};
// A client whose buffer type is not a Buffer.
struct Client {
  using client_concept = client_tag;
  using device_type = cpu::Device<>;
  using memory_space_type = cpu::MemorySpace<>;
  using buffer_type = int;
};

}  // namespace user

// ---- Executor
static_assert(Executor<cpu::ThreadPool>);
static_assert(Executor<cpu::InlineExecutor>);
static_assert(!Executor<user::ExecutorWithoutTag>);
static_assert(!Executor<int>);

// ---- MemorySpace
static_assert(MemorySpace<cpu::MemorySpace<>>);
static_assert(MemorySpace<cpu::MemorySpace<cpu::InlineExecutor>>);
static_assert(MemorySpace<user::MemorySpace>);
static_assert(!MemorySpace<user::Device>);
static_assert(!MemorySpace<cpu::Device<>>);

// ---- Device
static_assert(Device<cpu::Device<>>);
static_assert(Device<cpu::Device<cpu::InlineExecutor>>);
static_assert(Device<user::Device>);
static_assert(!Device<user::DeviceWithoutMemory>);
static_assert(!Device<user::MemorySpace>);
static_assert(!Device<cpu::Device<>*>);

// ---- Buffer
static_assert(Buffer<cpu::Buffer<>>);
static_assert(Buffer<cpu::Buffer<cpu::InlineExecutor>>);
static_assert(Buffer<user::Buffer>);
static_assert(!Buffer<user::UntaggedBuffer>);
static_assert(!Buffer<user::BufferWithoutFuture>);
static_assert(!Buffer<Literal>);

// ---- LoadedExecutable
static_assert(LoadedExecutable<user::Executable>);
static_assert(!LoadedExecutable<user::ExecutableLookAlike>);
static_assert(!LoadedExecutable<user::ExecutableWithoutSharded>);
static_assert(!LoadedExecutable<user::Buffer>);

// ---- Client
static_assert(Client<cpu::Client<>>);
static_assert(Client<cpu::Client<cpu::InlineExecutor>>);
static_assert(!Client<user::Client>);
static_assert(!Client<cpu::Device<>>);
static_assert(!Client<std::unique_ptr<cpu::Client<>>>);

namespace {
/// A generic algorithm written only against the concepts: copies a host literal to every
/// device of any client.
template <Client C>
std::vector<typename C::buffer_type> replicate(C& client, const Literal& literal) {
  std::vector<typename C::buffer_type> out;
  for (auto* device : client.devices()) {
    auto* memory_space = device->default_memory_space().value();
    out.push_back(client
                      .buffer_from_host_buffer(literal.bytes(), literal.dtype(), literal.dims(), std::nullopt,
                                               HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                               memory_space)
                      .value());
  }
  return out;
}
}  // namespace

TEST_CASE("concepts: a generic algorithm runs on any Client") {
  cpu::ClientOptions options;
  options.device_count = 3;
  options.thread_count = 1;
  auto client = cpu::Client<cpu::InlineExecutor>::create(options).value();
  Literal value = Literal::vector<std::uint16_t>({7, 8, 9});
  auto buffers = replicate(*client, value);
  REQUIRE(buffers.size() == 3);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    CHECK(buffers[i].device()->id() == static_cast<int>(i));
    CHECK(buffers[i].to_literal().await().value() == value);
  }
}

}  // namespace concepts_test
