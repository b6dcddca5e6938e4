"""Conan 2 recipe for pjrt_lite: a header-only C++20 library (component pjrt_lite) and the
static library of its CPU kernels compiled once (component cpu_kernels).

    conan create .            # builds the kernels, packages both and runs test_package/

The version is read from project(... VERSION ...) in CMakeLists.txt, so the two never differ.
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class PjrtLiteConan(ConanFile):
    name = "pjrt_lite"
    description = "An embeddable, header-only tensor runtime shaped like PJRT underneath and JAX on top"
    license = "Apache-2.0"
    topics = ("tensor", "runtime", "header-only", "eigen", "pjrt")
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "src/*", "cmake/*", "CMakeLists.txt", "LICENSE"

    def set_version(self):
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        match = re.search(r"project\(\s*pjrt_lite\s+VERSION\s+([0-9][0-9.]*)", cmakelists)
        self.version = match.group(1)

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # The public headers include Eigen's, so consumers need its headers too.
        self.requires("eigen/3.4.0", transitive_headers=True)

    def build_requirements(self):
        # Only the project's own test suite uses doctest; consumers never see it.
        self.test_requires("doctest/2.4.11")

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        toolchain = CMakeToolchain(self)
        for part in ("TESTS", "EXAMPLES", "BENCH"):
            toolchain.cache_variables[f"PJRT_LITE_BUILD_{part}"] = False
        toolchain.cache_variables["PJRT_LITE_INSTALL"] = True
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        CMake(self).install()

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "pjrt_lite")
        self.cpp_info.set_property("pkg_config_name", "pjrt_lite")
        headers = self.cpp_info.components["headers"]
        headers.set_property("cmake_target_name", "pjrt_lite::pjrt_lite")
        headers.set_property("pkg_config_name", "pjrt_lite")
        headers.bindirs = []
        headers.libdirs = []
        headers.requires = ["eigen::eigen"]
        if self.settings.os in ("Linux", "FreeBSD"):
            headers.system_libs = ["pthread"]
        kernels = self.cpp_info.components["cpu_kernels"]
        kernels.set_property("cmake_target_name", "pjrt_lite::cpu_kernels")
        kernels.set_property("pkg_config_name", "pjrt_lite_cpu_kernels")
        kernels.libs = ["pjrt_lite_cpu_kernels"]
        kernels.defines = ["PJRT_LITE_CPU_EXTERN_KERNELS"]
        kernels.requires = ["headers"]
