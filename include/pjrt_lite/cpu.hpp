#pragma once
// The CPU backend: `#include <pjrt_lite/cpu.hpp>` and create a pjrt_lite::cpu::Client<>.

#include "pjrt_lite/backends/cpu/buffer.hpp"     // IWYU pragma: export
#include "pjrt_lite/backends/cpu/client.hpp"     // IWYU pragma: export
#include "pjrt_lite/backends/cpu/device.hpp"     // IWYU pragma: export
#include "pjrt_lite/backends/cpu/executable.hpp"  // IWYU pragma: export
#include "pjrt_lite/backends/cpu/thread_pool.hpp"  // IWYU pragma: export
