#pragma once
// The tensor-program IR: ops and their typed attributes, shape inference, the Graph, its
// builder and verifier, the printer, the fingerprint and the binary serialization.

#include "pjrt_lite/ir/attributes.hpp"       // IWYU pragma: export
#include "pjrt_lite/ir/builder.hpp"          // IWYU pragma: export
#include "pjrt_lite/ir/byte_io.hpp"          // IWYU pragma: export
#include "pjrt_lite/ir/fingerprint.hpp"      // IWYU pragma: export
#include "pjrt_lite/ir/graph.hpp"            // IWYU pragma: export
#include "pjrt_lite/ir/op.hpp"               // IWYU pragma: export
#include "pjrt_lite/ir/printer.hpp"          // IWYU pragma: export
#include "pjrt_lite/ir/serialize.hpp"        // IWYU pragma: export
#include "pjrt_lite/ir/shape_inference.hpp"  // IWYU pragma: export
#include "pjrt_lite/ir/verifier.hpp"         // IWYU pragma: export
