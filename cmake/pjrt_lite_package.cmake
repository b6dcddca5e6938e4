# Packaging: `cmake --install` puts the headers, a CMake package (config, version, targets) and
# a pkg-config file under the prefix; the build tree exports the same target, so a project can
# also point pjrt_lite_DIR at a build directory. add_subdirectory / FetchContent users get
# pjrt_lite::pjrt_lite from the ALIAS in the top-level CMakeLists.txt.

include(CMakePackageConfigHelpers)

# Header-only: the package holds no binaries, so it lives under share/ and fits any architecture.
set(PJRT_LITE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/pjrt_lite" CACHE STRING
    "Where `cmake --install` puts pjrt_lite's CMake package, relative to the prefix")
set(PJRT_LITE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_DATADIR}/pkgconfig" CACHE STRING
    "Where `cmake --install` puts pjrt_lite.pc, relative to the prefix")

set_target_properties(pjrt_lite PROPERTIES EXPORT_NAME pjrt_lite)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/pjrt_liteConfig.cmake.in" "${PROJECT_BINARY_DIR}/pjrt_liteConfig.cmake"
  INSTALL_DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
# 0.x releases may break the API between minor versions, so only the same minor version matches.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/pjrt_liteConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
export(TARGETS pjrt_lite NAMESPACE pjrt_lite:: FILE "${PROJECT_BINARY_DIR}/pjrt_liteTargets.cmake")

# The .pc file finds its prefix from its own place (${pcfiledir}), so `cmake --install --prefix`
# and moved installs stay right.
file(RELATIVE_PATH PJRT_LITE_PC_PREFIX "/prefix/${PJRT_LITE_INSTALL_PKGCONFIGDIR}" "/prefix")
string(REGEX REPLACE "/$" "" PJRT_LITE_PC_PREFIX "\${pcfiledir}/${PJRT_LITE_PC_PREFIX}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(PJRT_LITE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(PJRT_LITE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/pjrt_lite.pc.in" "${PROJECT_BINARY_DIR}/pjrt_lite.pc" @ONLY)

if(PJRT_LITE_INSTALL)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
          FILES_MATCHING PATTERN "*.hpp")
  install(TARGETS pjrt_lite EXPORT pjrt_liteTargets)
  install(EXPORT pjrt_liteTargets NAMESPACE pjrt_lite:: DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
  install(FILES "${PROJECT_BINARY_DIR}/pjrt_liteConfig.cmake" "${PROJECT_BINARY_DIR}/pjrt_liteConfigVersion.cmake"
          DESTINATION "${PJRT_LITE_INSTALL_CMAKEDIR}")
  install(FILES "${PROJECT_BINARY_DIR}/pjrt_lite.pc" DESTINATION "${PJRT_LITE_INSTALL_PKGCONFIGDIR}")
endif()
