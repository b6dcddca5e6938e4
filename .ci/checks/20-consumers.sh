#!/usr/bin/env bash
# Packaging and warnings: installs pjrt_lite to a temporary prefix and builds and runs
# tests/consumer three ways (find_package after install, add_subdirectory, FetchContent from
# this checkout), checks the pkg-config file, compiles each installed header on its own, and
# every public header with g++ and clang++ under -Wall -Wextra -Wpedantic -Werror, without
# exceptions or RTTI.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends g++ cmake make git pkg-config clang-14 libeigen3-dev >/dev/null
fi
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo "-- $1: $((SECONDS - t0)) s"; t0=$SECONDS; }
t0=$SECONDS

# 1. Install.
cmake -S . -B "$work/pjrt" -DPJRT_LITE_BUILD_TESTS=OFF -DPJRT_LITE_BUILD_EXAMPLES=OFF -DPJRT_LITE_BUILD_BENCH=OFF \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --install "$work/pjrt" >/dev/null
test -f "$work/prefix/share/cmake/pjrt_lite/pjrt_liteConfigVersion.cmake"
test -f "$work/prefix/include/pjrt_lite/cpu.hpp"
step "install"

# 2. pkg-config: the flags name the installed headers and Eigen, and compile a light TU.
flags=$(PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" pkg-config --cflags pjrt_lite)
echo "pkg-config --cflags pjrt_lite: $flags"
case "$flags" in *"$work/prefix/share/pkgconfig/../../include"*eigen3*) ;; *) echo "unexpected flags" >&2; exit 1 ;; esac
# shellcheck disable=SC2086
g++ -std=c++20 $flags -fsyntax-only tests/consumer/light.cpp
step "pkg-config"

# 3. The consumer, each way; Debug keeps the one kernel translation unit quick to compile.
# The installed package builds and runs a whole program; add_subdirectory and FetchContent,
# whose headers are the same files, build the light consumer (no kernel translation unit,
# which costs over a minute each).
commit=$(git rev-parse HEAD 2>/dev/null || echo HEAD)
for mode in package subdirectory fetchcontent; do
  light=ON
  [ "$mode" = package ] && light=OFF
  cmake -S tests/consumer -B "$work/consumer-$mode" -DCMAKE_BUILD_TYPE=Debug -DPJRT_LITE_CONSUMER_MODE=$mode \
    -DPJRT_LITE_CONSUMER_LIGHT=$light \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DPJRT_LITE_SOURCE_DIR="$root" -DPJRT_LITE_GIT_TAG="$commit" >/dev/null
  cmake --build "$work/consumer-$mode" -j2 >/dev/null
  "$work/consumer-$mode/consumer"
  step "consumer via $mode"
done

# 4. Every installed header on its own (so each includes what it uses, and the install holds
# everything it includes), with clang++ -fsyntax-only, two at a time: a translation unit per
# header, declaring the kernels (PJRT_LITE_CPU_EXTERN_KERNELS) rather than compiling them.
# cpu_instantiate.hpp, which compiles every kernel, is left to the consumer's build above.
(cd "$work/prefix/include" && find pjrt_lite -name '*.hpp' ! -name cpu_instantiate.hpp | sort) |
  xargs -P2 -I{} sh -c 'printf "#include <%s>\n#include <%s>\n" "$1" "$1" |
    clang++-14 -std=c++20 -fsyntax-only -fno-exceptions -fno-rtti -DPJRT_LITE_CPU_EXTERN_KERNELS \
      -Wall -Wextra -Wpedantic -Werror -I"$2/prefix/include" -isystem /usr/include/eigen3 -x c++ - ||
    { echo "header $1 does not compile on its own" >&2; exit 255; }' sh {} "$work"
step "each installed header on its own, clang++-14 -fsyntax-only"

# 5. Every public header in one TU, with both compilers, warnings as errors (Eigen's headers
# are system headers, as the CMake and pkg-config packages make them).
find include -name '*.hpp' | sort | sed 's|^include/\(.*\)|#include <\1>|' >"$work/all_headers.cpp"
for cxx in g++ clang++-14; do
  "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -fno-exceptions -fno-rtti \
    -Iinclude -isystem /usr/include/eigen3 "$work/all_headers.cpp"
  step "all headers, $cxx -Wall -Wextra -Wpedantic -Werror"
done
