#pragma once
// The JAX-style front end: Tensor and its numpy-like functions, jit, and the function
// transformations jvp, vjp, grad, value_and_grad, jacfwd, jacrev and vmap, and control flow
// (cond, switch_, while_loop, fori_loop, scan).

#include "pjrt_lite/frontend/control_flow.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/jit.hpp"         // IWYU pragma: export
#include "pjrt_lite/frontend/tensor.hpp"      // IWYU pragma: export
#include "pjrt_lite/frontend/transforms.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/tree.hpp"        // IWYU pragma: export
