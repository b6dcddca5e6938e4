"""Conan 2 recipe for pjrt_lite, a header-only C++20 library.

    conan create .            # packages the headers and runs test_package/

The version is read from project(... VERSION ...) in CMakeLists.txt, so the two never differ.
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout


class PjrtLiteConan(ConanFile):
    name = "pjrt_lite"
    description = "An embeddable, header-only tensor runtime shaped like PJRT underneath and JAX on top"
    license = "Apache-2.0"
    topics = ("tensor", "runtime", "header-only", "eigen", "pjrt")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "CMakeLists.txt", "LICENSE"
    no_copy_source = True

    def set_version(self):
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        match = re.search(r"project\(\s*pjrt_lite\s+VERSION\s+([0-9][0-9.]*)", cmakelists)
        self.version = match.group(1)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # The public headers include Eigen's, so consumers need its headers too.
        self.requires("eigen/3.4.0", transitive_headers=True)

    def build_requirements(self):
        # Only the project's own test suite uses doctest; consumers never see it.
        self.test_requires("doctest/2.4.11")

    def validate(self):
        check_min_cppstd(self, 20)

    def package_id(self):
        self.info.clear()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"), os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "pjrt_lite")
        self.cpp_info.set_property("cmake_target_name", "pjrt_lite::pjrt_lite")
        self.cpp_info.set_property("pkg_config_name", "pjrt_lite")
        self.cpp_info.requires = ["eigen::eigen"]
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs = ["pthread"]
