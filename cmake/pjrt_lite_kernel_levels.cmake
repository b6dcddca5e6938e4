# Extra builds of the CPU kernels inside pjrt_lite::cpu_kernels, one per x86-64 level of
# PJRT_LITE_KERNEL_LEVELS, picked at run time by each compile (the best the CPU runs; see
# include/pjrt_lite/backends/cpu/detail/kernel_builds.hpp). Each is src/cpu_kernels_level.cpp
# compiled with -march=<level>, relinked (ld -r, section groups dissolved) and stripped of every
# global symbol but its entry point, so no inline function compiled for a level can replace the
# baseline's at link time. Needs an ELF toolchain (GNU ld and objcopy) on x86-64; elsewhere, and
# under sanitizers, the default is none.

set(_pjrt_lite_levels_default "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$" AND NOT PJRT_LITE_SANITIZE)
  # x86-64-v4 (AVX-512): twice the multiply-add width where the CPU has two 512-bit FMA units.
  set(_pjrt_lite_levels_default "x86-64-v3;x86-64-v4")
endif()
set(PJRT_LITE_KERNEL_LEVELS "${_pjrt_lite_levels_default}" CACHE STRING
    "Extra builds of the CPU kernels in pjrt_lite::cpu_kernels, picked at run time: empty, or x86-64-v3 and/or x86-64-v4")

foreach(level IN LISTS PJRT_LITE_KERNEL_LEVELS)
  if(NOT level MATCHES "^x86-64-v[34]$")
    message(FATAL_ERROR "PJRT_LITE_KERNEL_LEVELS: '${level}' is not one of x86-64-v3, x86-64-v4")
  endif()
  if(NOT CMAKE_OBJCOPY OR NOT CMAKE_LINKER)
    message(FATAL_ERROR "PJRT_LITE_KERNEL_LEVELS needs objcopy and ld (binutils); set it empty to build without")
  endif()
  string(REPLACE "-" "_" id "${level}")
  string(TOUPPER "${id}" ID)
  set(entry "pjrt_lite_cpu_compile_${id}")
  set(objects "pjrt_lite_cpu_kernels_${id}")
  add_library(${objects} OBJECT src/cpu_kernels_level.cpp)
  target_link_libraries(${objects} PRIVATE pjrt_lite)
  target_compile_definitions(${objects} PRIVATE PJRT_LITE_KERNEL_BUILD_ENTRY=${entry})
  if(PJRT_LITE_BUILD_TESTS)
    target_compile_definitions(${objects} PRIVATE EIGEN_RUNTIME_NO_MALLOC)  # as the library's own TU
  endif()
  # -fno-gnu-unique: GCC gives inline functions' static variables "unique global" binding,
  # which objcopy cannot make local; weak, they become local like every other symbol.
  # -ffp-contract=off: the level computes what the baseline computes, each op rounded as the
  # spec says (GCC would otherwise fuse a product into a neighbouring sum wherever it sees
  # one); FMA stays where the kernels ask for it (Eigen's pmadd). GCC 12's straight-line
  # vectorizer turns a complex product into vfmaddsub even so: -fno-tree-slp-vectorize.
  target_compile_options(${objects} PRIVATE -march=${level} -ffp-contract=off -Wall -Wextra -Wpedantic
                                            $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique -fno-tree-slp-vectorize>)
  if(level STREQUAL "x86-64-v4" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12's AVX-512 intrinsics start some results from a self-initialized "undefined"
    # vector, which -W(maybe-)uninitialized reports wherever Eigen's AVX-512 packets inline
    # them. The same project code compiles with both warnings on in the baseline and
    # x86-64-v3 builds.
    target_compile_options(${objects} PRIVATE -Wno-uninitialized -Wno-maybe-uninitialized)
  endif()
  set_target_properties(${objects} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(NOT PROJECT_IS_TOP_LEVEL)
    set_target_properties(${objects} PROPERTIES EXCLUDE_FROM_ALL ON)  # built when the library is
  endif()
  if(PJRT_LITE_NO_EXCEPTIONS)
    target_compile_options(${objects} PRIVATE -fno-exceptions -fno-rtti)
  endif()
  set(linked "${CMAKE_CURRENT_BINARY_DIR}/pjrt_lite_cpu_kernels_${id}.o")
  add_custom_command(
    OUTPUT "${linked}"
    COMMAND "${CMAKE_LINKER}" -r --force-group-allocation -o "${linked}.all.o" "$<TARGET_OBJECTS:${objects}>"
    COMMAND "${CMAKE_OBJCOPY}" --keep-global-symbol=${entry} "${linked}.all.o" "${linked}"
    DEPENDS ${objects} "$<TARGET_OBJECTS:${objects}>"
    COMMAND_EXPAND_LISTS VERBATIM
    COMMENT "pjrt_lite: the ${level} kernels, every symbol local but ${entry}")
  set_source_files_properties("${linked}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(pjrt_lite_cpu_kernels PRIVATE "${linked}")
  target_compile_definitions(pjrt_lite_cpu_kernels_objects PRIVATE PJRT_LITE_CPU_KERNELS_${ID})
endforeach()
