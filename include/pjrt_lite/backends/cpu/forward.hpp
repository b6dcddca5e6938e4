#pragma once
// Forward declarations of the CPU backend. Every class is a template over its Executor
// policy (cpu::ThreadPool or cpu::InlineExecutor); the default is the pool.

namespace pjrt_lite::inline v0_1::cpu {

class ThreadPool;
class InlineExecutor;

template <class E = ThreadPool> class Client;
template <class E = ThreadPool> class Device;
template <class E = ThreadPool> class MemorySpace;
template <class E = ThreadPool> class Buffer;

}  // namespace pjrt_lite::cpu

namespace pjrt_lite::inline v0_1::cpu {
template <class E = ThreadPool> class LoadedExecutable;
namespace detail {
class Program;
}  // namespace detail
}  // namespace pjrt_lite::cpu
