#pragma once
// The JAX-style front end: Tensor and its numpy-like functions, jit, and the function
// transformations jvp, vjp, grad, value_and_grad, jacfwd, jacrev and vmap.

#include "pjrt_lite/frontend/jit.hpp"         // IWYU pragma: export
#include "pjrt_lite/frontend/tensor.hpp"      // IWYU pragma: export
#include "pjrt_lite/frontend/transforms.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/tree.hpp"        // IWYU pragma: export
