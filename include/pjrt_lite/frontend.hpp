#pragma once
// The JAX-style front end: Tensor and its numpy-like functions, jit, the function
// transformations jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, hessian and vmap,
// stop_gradient, custom_jvp and custom_vjp, and control flow (cond, switch_, while_loop,
// fori_loop, scan).

#include "pjrt_lite/frontend/control_flow.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/custom_derivatives.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/jacobians.hpp"   // IWYU pragma: export
#include "pjrt_lite/frontend/jit.hpp"         // IWYU pragma: export
#include "pjrt_lite/frontend/tensor.hpp"      // IWYU pragma: export
#include "pjrt_lite/frontend/transforms.hpp"  // IWYU pragma: export
#include "pjrt_lite/frontend/tree.hpp"        // IWYU pragma: export
