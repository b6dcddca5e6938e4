#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu_instantiate.hpp"
// Everything <pjrt_lite/cpu_instantiate.hpp> compiles but the linalg kernels, which
// pjrt_lite::cpu_kernels compiles in a translation unit of their own (src/cpu_linalg.cpp) so
// that the two build side by side.

#include "pjrt_lite/backends/cpu/detail/compiler.hpp"  // the non-inline definition of compile_program
#include "pjrt_lite/backends/cpu/detail/executable_impl.hpp"  // the executable's members, Client::compile
#include "pjrt_lite/backends/reference/eval_node.hpp"  // and of the reference interpreter's eval_node
#include "pjrt_lite/ir/detail/infer_shapes.hpp"       // shape inference
#include "pjrt_lite/ir/detail/verify_graph.hpp"       // and graph verification
#include "pjrt_lite/cpu.hpp"

namespace pjrt_lite::inline v0_1::cpu {
template class Client<ThreadPool>;
template class Client<InlineExecutor>;
template class LoadedExecutable<ThreadPool>;
template class LoadedExecutable<InlineExecutor>;
}  // namespace pjrt_lite::cpu
