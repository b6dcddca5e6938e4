# Packaging: `cmake --install` puts the headers, the static library pjrt_lite::cpu_kernels, a
# CMake package (config, version, targets) and pkg-config files under the prefix; the build
# tree exports the same targets, so a project can also point pjrt_lite_DIR at a build
# directory. add_subdirectory / FetchContent users get pjrt_lite::pjrt_lite and
# pjrt_lite::cpu_kernels from the ALIASes in the top-level CMakeLists.txt.

include(CMakePackageConfigHelpers)

# The package holds a compiled library, so it lives under the architecture's lib directory.
set(PJRT_LITE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pjrt_lite" CACHE STRING
    "Where `cmake --install` puts pjrt_lite's CMake package, relative to the prefix")
set(PJRT_LITE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig" CACHE STRING
    "Where `cmake --install` puts pjrt_lite.pc and pjrt_lite_cpu_kernels.pc, relative to the prefix")

set_target_properties(pjrt_lite PROPERTIES EXPORT_NAME pjrt_lite)
set(pjrt_lite_export_targets pjrt_lite)
if(TARGET pjrt_lite_cpu_kernels)
  list(APPEND pjrt_lite_export_targets pjrt_lite_cpu_kernels)
endif()

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/pjrt_liteConfig.cmake.in" "${PROJECT_BINARY_DIR}/pjrt_liteConfig.cmake"
  INSTALL_DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
# 0.x releases may break the API between minor versions, so only the same minor version matches.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/pjrt_liteConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
export(TARGETS ${pjrt_lite_export_targets} NAMESPACE pjrt_lite:: FILE "${PROJECT_BINARY_DIR}/pjrt_liteTargets.cmake")

# pjrt_lite::mpi in a targets file of its own, which the config includes only where MPI is
# found: a package built with MPI still works without it.
if(TARGET pjrt_lite_mpi)
  set_target_properties(pjrt_lite_mpi PROPERTIES EXPORT_NAME mpi)
  export(TARGETS pjrt_lite_mpi NAMESPACE pjrt_lite:: FILE "${PROJECT_BINARY_DIR}/pjrt_liteMpiTargets.cmake")
endif()

# The .pc files find their prefix from their own place (${pcfiledir}), so `cmake --install
# --prefix` and moved installs stay right.
file(RELATIVE_PATH PJRT_LITE_PC_PREFIX "/prefix/${PJRT_LITE_INSTALL_PKGCONFIGDIR}" "/prefix")
string(REGEX REPLACE "/$" "" PJRT_LITE_PC_PREFIX "\${pcfiledir}/${PJRT_LITE_PC_PREFIX}")
foreach(dir INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(PJRT_LITE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(PJRT_LITE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/pjrt_lite.pc.in" "${PROJECT_BINARY_DIR}/pjrt_lite.pc" @ONLY)
configure_file("${CMAKE_CURRENT_LIST_DIR}/pjrt_lite_cpu_kernels.pc.in"
               "${PROJECT_BINARY_DIR}/pjrt_lite_cpu_kernels.pc" @ONLY)

if(PJRT_LITE_INSTALL)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
          FILES_MATCHING PATTERN "*.hpp")
  install(TARGETS ${pjrt_lite_export_targets} EXPORT pjrt_liteTargets)
  install(EXPORT pjrt_liteTargets NAMESPACE pjrt_lite:: DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
  if(TARGET pjrt_lite_mpi)
    install(TARGETS pjrt_lite_mpi EXPORT pjrt_liteMpiTargets)
    install(EXPORT pjrt_liteMpiTargets NAMESPACE pjrt_lite:: DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
  endif()
  install(FILES "${PROJECT_BINARY_DIR}/pjrt_liteConfig.cmake" "${PROJECT_BINARY_DIR}/pjrt_liteConfigVersion.cmake"
          DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
  install(FILES "${PROJECT_BINARY_DIR}/pjrt_lite.pc" DESTINATION "${PJRT_LITE_INSTALL_PKGCONFIGDIR}")
  if(TARGET pjrt_lite_cpu_kernels)
    install(FILES "${PROJECT_BINARY_DIR}/pjrt_lite_cpu_kernels.pc" DESTINATION "${PJRT_LITE_INSTALL_PKGCONFIGDIR}")
  endif()
endif()
