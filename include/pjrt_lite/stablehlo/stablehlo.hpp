#pragma once
// StableHLO text to IR and back: parse_module / parse_stablehlo (parser.hpp) and
// to_stablehlo (printer.hpp).

#include "pjrt_lite/stablehlo/module.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/parser.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/printer.hpp"  // IWYU pragma: export
#include "pjrt_lite/stablehlo/types.hpp"    // IWYU pragma: export
