#pragma once
// Observability in one include: Traced<C, Sink> (a call log of any client), the sinks, the
// Timeline (Chrome trace-event JSON) and Graphviz pictures of programs.

#include "pjrt_lite/trace/call_stack.hpp"  // IWYU pragma: export
#include "pjrt_lite/trace/client.hpp"      // IWYU pragma: export
#include "pjrt_lite/trace/dot.hpp"         // IWYU pragma: export
#include "pjrt_lite/trace/record.hpp"      // IWYU pragma: export
#include "pjrt_lite/trace/timeline.hpp"    // IWYU pragma: export
