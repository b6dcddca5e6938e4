#pragma once
// Graph-to-graph passes: dead code, common subexpressions, constant folding, algebraic
// identities, and simplify(), which runs them to a fixed point.

#include "pjrt_lite/transforms/algebraic.hpp"  // IWYU pragma: export
#include "pjrt_lite/transforms/cse.hpp"        // IWYU pragma: export
#include "pjrt_lite/transforms/dce.hpp"        // IWYU pragma: export
#include "pjrt_lite/transforms/fold.hpp"       // IWYU pragma: export
#include "pjrt_lite/transforms/rewriter.hpp"   // IWYU pragma: export
#include "pjrt_lite/transforms/simplify.hpp"   // IWYU pragma: export
