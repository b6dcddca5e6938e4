// What happens under `jnp.device_put(1)`, step by step, on pjrt_lite's CPU client: create a
// client, put a scalar on a device, wait for the transfer, read it back.
#include <cstdio>
#include <cstdint>

// Header-only, every kernel compiles here; this program runs no LAPACK-style op, so it leaves
// those kernels out (docs in backends/cpu/detail/linalg_factory.hpp).
#define PJRT_LITE_CPU_NO_LINALG_KERNELS
#include "pjrt_lite/cpu.hpp"

using namespace pjrt_lite;

int main() {
  std::printf("1. create a CPU client with 2 devices\n");
  cpu::ClientOptions options;
  options.device_count = 2;
  StatusOr<std::unique_ptr<cpu::Client<>>> client_or = cpu::Client<>::create(options);
  if (!client_or.ok()) {
    std::fprintf(stderr, "%s\n", client_or.status().to_string().c_str());
    return 1;
  }
  cpu::Client<>& client = **client_or;
  std::printf("   platform %s, %d devices:", std::string(client.platform_name()).c_str(), client.device_count());
  for (auto* device : client.devices()) std::printf(" %s", device->to_string().c_str());
  std::printf("\n");

  cpu::Device<>* device = client.devices()[0];
  cpu::MemorySpace<>* memory = device->default_memory_space().value();
  std::printf("2. pick %s and its default memory space %s\n", device->debug_string().c_str(),
              memory->to_string().c_str());

  const std::int32_t one = 1;
  std::printf("3. buffer_from_host_buffer(&one, s32, dims=[], ImmutableUntilTransferCompletes)\n");
  StatusOr<cpu::Buffer<>> buffer = client.buffer_from_host_buffer(
      std::as_bytes(std::span<const std::int32_t>(&one, 1)), DType::kS32, {}, std::nullopt,
      HostBufferSemantics::kImmutableUntilTransferCompletes,
      [] { std::printf("   on_done: the runtime no longer needs the host value\n"); }, memory);
  if (!buffer.ok()) {
    std::fprintf(stderr, "%s\n", buffer.status().to_string().c_str());
    return 1;
  }
  std::printf("   -> %s, %lld bytes on the device\n", buffer->to_string().c_str(),
              static_cast<long long>(buffer->on_device_size_in_bytes().value()));

  std::printf("4. await the buffer's ready future\n");
  Status ready = buffer->get_ready_future().await();
  std::printf("   -> %s\n", ready.to_string().c_str());

  std::printf("5. to_literal(): copy it back to the host\n");
  StatusOr<Literal> literal = buffer->to_literal().await();
  if (!literal.ok()) {
    std::fprintf(stderr, "%s\n", literal.status().to_string().c_str());
    return 1;
  }
  std::printf("   -> %s\n", literal->to_string().c_str());

  std::printf("6. copy_to_device(cpu:1), then delete the original\n");
  cpu::Buffer<> moved = buffer->copy_to_device(client.devices()[1]).value();
  buffer->delete_buffer();
  std::printf("   -> %s holds %s; the original is %s\n", moved.to_string().c_str(),
              moved.to_literal().await().value().to_string().c_str(),
              buffer->is_deleted() ? "deleted" : "alive");
  return 0;
}
