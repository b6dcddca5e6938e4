#pragma once
// Tensor: the array type of traced C++ functions, numpy-like, as jax.numpy is over tracers.
//
//   auto f = [](Tensor x) { return -(sin(x) * 2.0) + x; };
//
// A Tensor is a symbolic value: each operation adds a node to the graph of the Trace the
// Tensor belongs to (jit, grad, vmap, jvp and vjp each open one). Functions live in
// pjrt_lite::np and are found by argument-dependent lookup. Semantics follow jax.numpy:
// numpy broadcasting, type promotion between tensors, and weakly typed C++ scalars (2.0 * an
// f32 tensor stays f32; an integer tensor times 2.0 becomes f32).
//
// Errors (mismatched shapes, a tensor used after its trace ended, ...) do not stop the C++
// code: the first one is kept by the trace, later operations return invalid Tensors, and the
// transformation that opened the trace returns the error as a Status.
//
// This header gathers the pieces, by role: frontend/tracer.hpp (Tensor, Trace, promotion)
// and frontend/numpy/ creation, shapes, elementwise, reductions, linalg, nn, lax (pad, flip,
// dynamic slices, cumulative ops), convolution (and pooling), indexing (take, at), sorting,
// quantize (uniform quantization to integers and back) and random (jax.random's threefry
// keys, in pjrt_lite::random).

#include "pjrt_lite/frontend/numpy/convolution.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/creation.hpp"     // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/elementwise.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/indexing.hpp"     // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/lax.hpp"          // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/linalg.hpp"       // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/nn.hpp"           // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/quantize.hpp"     // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/random.hpp"       // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/reductions.hpp"   // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/shapes.hpp"       // IWYU pragma: export
#include "pjrt_lite/frontend/numpy/sorting.hpp"      // IWYU pragma: export
#include "pjrt_lite/frontend/tracer.hpp"             // IWYU pragma: export
