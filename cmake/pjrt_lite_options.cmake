# Options of the pjrt_lite build. Tests and examples are on by default only when pjrt_lite is
# the top-level project, so add_subdirectory / FetchContent users build none of them; the
# benchmarks only when asked for.

option(PJRT_LITE_BUILD_TESTS "Build the test suite" ${PROJECT_IS_TOP_LEVEL})
option(PJRT_LITE_BUILD_EXAMPLES "Build the examples" ${PROJECT_IS_TOP_LEVEL})
# The benchmarks are opt-in: they compile every kernel once more at -O3 -march=native (bench/),
# which the test suite does not need.
option(PJRT_LITE_BUILD_BENCH "Build the benchmarks (needs Google Benchmark)" OFF)
option(PJRT_LITE_BUILD_KERNELS
       "Add the compiled library pjrt_lite::cpu_kernels (the tests and examples need it)" ON)
option(PJRT_LITE_LINALG_KERNELS
       "Compile the linalg kernels (Eigen's decompositions) into pjrt_lite::cpu_kernels; OFF refuses linalg programs" ON)
option(PJRT_LITE_INSTALL "Generate the install rules (headers, CMake package, pkg-config file)" ${PROJECT_IS_TOP_LEVEL})
option(PJRT_LITE_WERROR "Treat warnings in pjrt_lite's own code as errors" OFF)
# The older spelling of PJRT_LITE_WERROR.
if(PJRT_LITE_WARNINGS_AS_ERRORS)
  set(PJRT_LITE_WERROR ON)
endif()
option(PJRT_LITE_HEADER_CHECKS "Compile every public header on its own, one translation unit each, with the tests" OFF)
option(PJRT_LITE_UNITY_TESTS "Compile the test files in unity batches (fewer, larger translation units)" ON)
option(PJRT_LITE_NO_EXCEPTIONS
       "Build tests, examples and benchmarks with -fno-exceptions -fno-rtti, as game engines do" OFF)
set(PJRT_LITE_STABLEHLO_TESTDATA "${PROJECT_SOURCE_DIR}/../shared/stablehlo-testdata" CACHE PATH
    "The StableHLO conformance corpus (JAX-exported .mlir files); tests that need it skip when absent")
set(PJRT_LITE_SANITIZE "" CACHE STRING
    "Sanitizers for tests and examples: empty, 'address,undefined' or 'thread'")
set_property(CACHE PJRT_LITE_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")

if(PROJECT_IS_TOP_LEVEL)
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    # Optimized, with line tables only (-g1): full debug info of this template-heavy code
    # costs over a third more compile time, and the tests and examples rarely need it. A build
    # type given on the command line keeps CMake's own flags.
    set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
    set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG" CACHE STRING
        "Flags of RelWithDebInfo builds" FORCE)
  endif()
  find_program(PJRT_LITE_CCACHE ccache)
  if(PJRT_LITE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
    set(CMAKE_CXX_COMPILER_LAUNCHER "${PJRT_LITE_CCACHE}")
  endif()
endif()

# pjrt_lite_project_settings(<target>): warnings, sanitizers and the no-exceptions build for the
# project's own binaries.
function(pjrt_lite_project_settings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(PJRT_LITE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(PJRT_LITE_NO_EXCEPTIONS)
    target_compile_options(${target} PRIVATE -fno-exceptions -fno-rtti)
    # Without exceptions doctest drops its REQUIRE family unless told to keep it (a failed
    # REQUIRE then ends the test run instead of the test case).
    target_compile_definitions(${target} PRIVATE DOCTEST_CONFIG_NO_EXCEPTIONS_BUT_WITH_ALL_ASSERTS)
  endif()
  if(PJRT_LITE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${PJRT_LITE_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${PJRT_LITE_SANITIZE})
  endif()
endfunction()

# pjrt_lite_kernels_objects(<name> <sources>...): <name>_objects, an object library of sources that
# use pjrt_lite::cpu_kernels, compiled as its consumers are (its public definitions) but without
# linking it. Make then compiles them while the library builds: a target's own objects wait for
# every target it links, and the linalg kernels alone take five minutes of CPU. The executable
# that links the objects links the library.
function(pjrt_lite_kernels_objects name)
  add_library(${name}_objects OBJECT ${ARGN})
  target_link_libraries(${name}_objects PRIVATE pjrt_lite::pjrt_lite)
  target_compile_definitions(${name}_objects
                             PRIVATE $<TARGET_PROPERTY:pjrt_lite_cpu_kernels,INTERFACE_COMPILE_DEFINITIONS>)
  pjrt_lite_project_settings(${name}_objects)
endfunction()
