// The concepts, checked at compile time: every static_assert is a test that fails the build.
// Positive cases: the CPU backend, the Traced decorators and a minimal user-written backend that
// opts in. Negative cases: look-alikes that lack the tag, and opted-in types that get exactly
// one piece of the contract wrong (a member missing, or returning the wrong type).
#include <doctest/doctest.h>

#include <memory>
#include <type_traits>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/trace/traced.hpp"

// ---- Both namespaces at once: the concepts and the CPU classes never share a name, so every
// name below is unambiguous (an ambiguous one would not compile).
namespace both_namespaces {

using namespace pjrt_lite;
using namespace pjrt_lite::cpu;

static_assert(PjRtClient<Client<>>);
static_assert(CompilingClient<Client<InlineExecutor>>);
static_assert(PjRtDevice<Device<>>);
static_assert(PjRtMemorySpace<MemorySpace<>>);
static_assert(PjRtBuffer<Buffer<>>);
static_assert(PjRtLoadedExecutable<LoadedExecutable<>>);
static_assert(Executor<ThreadPool>);

// A generic function constrained by a concept, over a class named with the same directives.
template <PjRtClient C>
int count_devices(const C& client) {
  return static_cast<int>(client.devices().size());
}

TEST_CASE("concepts: the contracts and the CPU classes are both in scope, unambiguously") {
  ClientOptions options;
  options.device_count = 2;
  std::unique_ptr<Client<InlineExecutor>> client = Client<InlineExecutor>::create(options).value();
  CHECK(count_devices(*client) == 2);
  Device<InlineExecutor>* device = client->devices()[1];
  MemorySpace<InlineExecutor>* memory_space = device->default_memory_space().value();
  const Literal values = Literal::vector<float>({1.5f, -2.0f});
  Buffer<InlineExecutor> buffer = client->buffer_from_literal(values, memory_space).value();
  CHECK(buffer.device() == device);
  CHECK(buffer.to_literal().await().value() == values);
}

}  // namespace both_namespaces

namespace concepts_test {

using namespace pjrt_lite;

namespace user {

// A minimal backend written by a user: every type opts in through its tag and names the
// types it points at.
struct Device;
// Opted in, with every member but the device_type it lists (a negative case, and what
// MemorySpace completes).
struct MemorySpaceWithoutDeviceType {
  using memory_space_concept = memory_space_tag;
  int id() const { return 0; }
  std::string_view kind() const { return "device"; }
  int kind_id() const { return 0; }
  std::span<Device* const> devices() const { return {}; }
  std::string debug_string() const { return "m"; }
  std::string to_string() const { return "m"; }
};
struct MemorySpace : MemorySpaceWithoutDeviceType {
  using device_type = Device;
};
struct Device {
  using device_concept = device_tag;
  using memory_space_type = MemorySpace;
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
  using device_type = Device;
  using memory_space_type = MemorySpace;
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
// Opted in, but cannot run on a given device (a negative case, and what Executable completes).
struct ExecutableWithoutSharded {
  using loaded_executable_concept = loaded_executable_tag;
  using buffer_type = Buffer;
  using device_type = Device;
  std::string_view name() const { return "toy"; }
  std::span<Device* const> addressable_devices() const { return {}; }
  StatusOr<std::vector<std::vector<Buffer>>> execute(std::span<const std::vector<Buffer*>>, const ExecuteOptions&) {
    return std::vector<std::vector<Buffer>>{};
  }
  void delete_executable() {}
  bool is_deleted() const { return false; }
};
struct Executable : ExecutableWithoutSharded {
  StatusOr<std::vector<Buffer>> execute_sharded(std::span<Buffer* const>, Device*, const ExecuteOptions&) {
    return std::vector<Buffer>{};
  }
  StatusOr<std::vector<Buffer>> execute_portable(std::span<Buffer* const>, Device*, const ExecuteOptions&) {
    return std::vector<Buffer>{};
  }
};
struct Client {
  using client_concept = client_tag;
  using device_type = Device;
  using memory_space_type = MemorySpace;
  using buffer_type = Buffer;
  using executable_type = Executable;
  std::string_view platform_name() const { return "toy"; }
  std::string_view platform_version() const { return "0"; }
  int process_index() const { return 0; }
  int device_count() const { return 0; }
  int addressable_device_count() const { return 0; }
  std::span<Device* const> devices() const { return {}; }
  std::span<Device* const> addressable_devices() const { return {}; }
  std::span<MemorySpace* const> memory_spaces() const { return {}; }
  StatusOr<Device*> lookup_device(int) const { return not_found_error("none"); }
  StatusOr<Buffer> buffer_from_host_buffer(std::span<const std::byte>, DType, std::span<const std::int64_t>,
                                           std::optional<std::span<const std::int64_t>>, HostBufferSemantics,
                                           UniqueFunction<void()>, MemorySpace*) {
    return Buffer{};
  }
  StatusOr<Buffer> create_uninitialized_buffer(const Shape&, MemorySpace*) { return Buffer{}; }
};
struct ClientThatCompiles : Client {
  StatusOr<Executable> compile(const Graph&) { return Executable{}; }
};

// ---- Executors
struct ExecutorWithoutTag {
  void schedule(UniqueFunction<void()> t) { t(); }
  int num_threads() const { return 0; }
};
// schedule() says whether it took the task: the contract's schedule always takes it.
struct ExecutorThatMayRefuse {
  using executor_concept = executor_tag;
  bool schedule(UniqueFunction<void()> t) { t(); return true; }
  int num_threads() const { return 0; }
};

// ---- Memory spaces, each wrong in one typed requirement (MemorySpaceWithoutDeviceType is
// above, MemorySpace's base)
struct MemorySpaceListingMemorySpaces : MemorySpace {
  std::span<MemorySpace* const> devices() const { return {}; }
};

// ---- Devices
struct DeviceWithoutMemory {
  using device_concept = device_tag;
  int id() const { return 0; }
};
struct DeviceListingDevices : Device {
  std::span<Device* const> memory_spaces() const { return {}; }
};
// Cannot say why there is no default memory space.
struct DeviceWithBareDefault : Device {
  MemorySpace* default_memory_space() const { return nullptr; }
};
// Says its memory spaces are ints, but lists MemorySpace pointers.
struct DeviceOfIntMemorySpaces : Device {
  using memory_space_type = int;
};

// ---- Buffers
// Throws away errors: to_literal returns a plain Literal.
struct BufferWithoutFuture : Buffer {
  Literal to_literal() const { return Literal(shape); }
};
struct UntaggedBuffer : Buffer {
  using buffer_concept = void;
};
struct BufferWithIdDevice : Buffer {
  int device() const { return 0; }  // a device id, not the device
};
struct BufferWithConstMemorySpace : Buffer {
  const MemorySpace* memory_space() const { return nullptr; }
};
struct BufferWithOtherDeviceType : Buffer {
  using device_type = MemorySpace;  // device() returns a Device*, not this
};
struct BufferDeletingWithStatus : Buffer {
  Status delete_buffer() { return Status(); }
};

// ---- Executables (ExecutableWithoutSharded is above, Executable's base)
// Has every member of an executable, but never opted in.
struct ExecutableLookAlike : Executable {
  struct loaded_executable_concept {};  // a tag that is not loaded_executable_tag
};
struct ExecutableWithDeviceIds : Executable {
  std::span<const int> addressable_devices() const { return {}; }
};

// ---- Clients
// Its buffer type is not a buffer.
struct ClientOfInts : Client {
  using buffer_type = int;
};
// Its buffers live on another backend's devices.
struct ClientOfCpuBuffers : Client {
  using buffer_type = cpu::Buffer<>;
  StatusOr<cpu::Buffer<>> buffer_from_host_buffer(std::span<const std::byte>, DType, std::span<const std::int64_t>,
                                                  std::optional<std::span<const std::int64_t>>, HostBufferSemantics,
                                                  UniqueFunction<void()>, MemorySpace*);
  StatusOr<cpu::Buffer<>> create_uninitialized_buffer(const Shape&, MemorySpace*);
};
// lookup_device without the error for an unknown id.
struct ClientWithBareLookup : Client {
  Device* lookup_device(int) const { return nullptr; }
};
// compile() without a Status.
struct ClientCompilingBare : Client {
  Executable compile(const Graph&) { return Executable{}; }
};
// compile() into a type other than its executable_type.
struct ClientCompilingOther : Client {
  StatusOr<ExecutableLookAlike> compile(const Graph&) { return ExecutableLookAlike{}; }
};

}  // namespace user

// ---- Executor
static_assert(Executor<cpu::ThreadPool>);
static_assert(Executor<cpu::InlineExecutor>);
static_assert(!Executor<user::ExecutorWithoutTag>);
static_assert(!Executor<user::ExecutorThatMayRefuse>);
static_assert(!Executor<int>);

// ---- The CPU client's classes, for both executors, and a Traced client's (whose types are
// its inner client's wrapped), satisfy every concept.
template <class C>
constexpr bool client_family_satisfies_all =
    PjRtClient<C> && CompilingClient<C> && PjRtMemorySpace<typename C::memory_space_type> &&
    PjRtDevice<typename C::device_type> && PjRtBuffer<typename C::buffer_type> &&
    PjRtLoadedExecutable<typename C::executable_type>;
static_assert(client_family_satisfies_all<cpu::Client<>>);
static_assert(client_family_satisfies_all<cpu::Client<cpu::InlineExecutor>>);
static_assert(client_family_satisfies_all<Traced<cpu::Client<>>>);
static_assert(client_family_satisfies_all<Traced<cpu::Client<>, trace::RecordingSink>>);
static_assert(client_family_satisfies_all<Traced<Traced<cpu::Client<cpu::InlineExecutor>>, trace::RecordingSink>>);
static_assert(std::is_same_v<cpu::Client<>::buffer_type, cpu::Buffer<>>);
static_assert(std::is_same_v<cpu::Client<cpu::InlineExecutor>::executable_type, cpu::LoadedExecutable<cpu::InlineExecutor>>);

// ---- PjRtMemorySpace
static_assert(PjRtMemorySpace<user::MemorySpace>);
static_assert(!PjRtMemorySpace<user::Device>);
static_assert(!PjRtMemorySpace<cpu::Device<>>);
static_assert(!PjRtMemorySpace<user::MemorySpaceWithoutDeviceType>);
static_assert(!PjRtMemorySpace<user::MemorySpaceListingMemorySpaces>);

// ---- PjRtDevice
static_assert(PjRtDevice<user::Device>);
static_assert(!PjRtDevice<user::DeviceWithoutMemory>);
static_assert(!PjRtDevice<user::MemorySpace>);
static_assert(!PjRtDevice<cpu::Device<>*>);
static_assert(!PjRtDevice<user::DeviceListingDevices>);
static_assert(!PjRtDevice<user::DeviceWithBareDefault>);
static_assert(!PjRtDevice<user::DeviceOfIntMemorySpaces>);

// ---- PjRtBuffer
static_assert(PjRtBuffer<user::Buffer>);
static_assert(!PjRtBuffer<user::UntaggedBuffer>);
static_assert(!PjRtBuffer<user::BufferWithoutFuture>);
static_assert(!PjRtBuffer<user::BufferWithIdDevice>);
static_assert(!PjRtBuffer<user::BufferWithConstMemorySpace>);
static_assert(!PjRtBuffer<user::BufferWithOtherDeviceType>);
static_assert(!PjRtBuffer<user::BufferDeletingWithStatus>);
static_assert(!PjRtBuffer<Literal>);

// ---- PjRtLoadedExecutable
static_assert(PjRtLoadedExecutable<user::Executable>);
static_assert(!PjRtLoadedExecutable<user::ExecutableLookAlike>);
static_assert(!PjRtLoadedExecutable<user::ExecutableWithoutSharded>);
static_assert(!PjRtLoadedExecutable<user::ExecutableWithDeviceIds>);
static_assert(!PjRtLoadedExecutable<user::Buffer>);

// ---- PjRtClient
static_assert(PjRtClient<user::Client>);
static_assert(!PjRtClient<user::ClientOfInts>);
static_assert(!PjRtClient<user::ClientOfCpuBuffers>);
static_assert(!PjRtClient<user::ClientWithBareLookup>);
static_assert(!PjRtClient<cpu::Device<>>);
static_assert(!PjRtClient<std::unique_ptr<cpu::Client<>>>);

// ---- CompilingClient
static_assert(CompilingClient<user::ClientThatCompiles>);
static_assert(!CompilingClient<user::Client>);  // no compile()
static_assert(!CompilingClient<user::ClientCompilingBare>);
static_assert(!CompilingClient<user::ClientCompilingOther>);
static_assert(!CompilingClient<user::ClientOfInts>);

namespace {
/// A generic algorithm written only against the concepts: copies a host literal to every
/// device of any client.
template <PjRtClient C>
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

/// Compiles and runs a graph on the first device of any compiling client.
template <CompilingClient C>
StatusOr<Literal> run_first_output(C& client, const Graph& graph) {
  PJRT_LITE_ASSIGN_OR_RETURN(auto exe, client.compile(graph));
  PJRT_LITE_ASSIGN_OR_RETURN(auto outputs, exe.execute_sharded({}, client.devices()[0]));
  return outputs.at(0).to_literal().await();
}
}  // namespace

TEST_CASE("concepts: a generic algorithm runs on any PjRtClient") {
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

TEST_CASE("concepts: a generic algorithm compiles on the CPU client and on a traced one") {
  GraphBuilder b("three");
  Value three = b.add(b.constant(1.0f), b.constant(2.0f));
  const Graph graph = b.build({three}).value();
  auto plain = cpu::Client<cpu::InlineExecutor>::create({}).value();
  StatusOr<Literal> a = run_first_output(*plain, graph);
  REQUIRE(a.ok());
  CHECK(*a == Literal::scalar(3.0f));
  auto traced = Traced<cpu::Client<cpu::InlineExecutor>, trace::RecordingSink>::create(cpu::ClientOptions{}).value();
  StatusOr<Literal> t = run_first_output(*traced, graph);
  REQUIRE(t.ok());
  CHECK(*t == Literal::scalar(3.0f));
}

}  // namespace concepts_test
