#pragma once
// StableHLO text to IR and back: parse_module / parse_stablehlo (parser.hpp) and
// to_stablehlo (printer.hpp); evaluate_check (checks.hpp) and run_test_program (runner.hpp)
// for test programs.

#include "pjrt_lite/stablehlo/checks.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/module.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/parser.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/printer.hpp"  // IWYU pragma: export
#include "pjrt_lite/stablehlo/runner.hpp"   // IWYU pragma: export
#include "pjrt_lite/stablehlo/types.hpp"    // IWYU pragma: export
