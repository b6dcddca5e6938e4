#!/usr/bin/env bash
# Packaging and warnings: builds and installs pjrt_lite (with its kernels library) to a
# temporary prefix and builds and runs tests/consumer three ways (find_package after install,
# add_subdirectory, FetchContent from this checkout), checks the pkg-config files, compiles
# each installed header on its own, and the headers together with g++ and clang++ under
# -Wall -Wextra -Wpedantic -Werror, without exceptions or RTTI.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends g++ cmake make git pkg-config clang-14 libeigen3-dev >/dev/null
fi
root=$PWD
work=$(mktemp -d)
# The background jobs of steps 2 and 3 end with the script, so they never write into a removed
# $work after a failing step.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
step() { echo "-- $1: $((SECONDS - t0)) s"; t0=$SECONDS; }
t0=$SECONDS

# 1. Install. CI has just run the README's build in build/, which is what a user installs
# (`cmake --build build && cmake --install build`): install that, kernels library included.
# Run on its own, the script configures and builds an install tree first, at -O0 (Debug): this
# checks the packaging, not the speed, and -O0 compiles the kernels in a fraction of the time.
if [ -f build/CMakeCache.txt ] && [ -n "$(find build -maxdepth 1 -name 'libpjrt_lite_cpu_kernels.a')" ]; then
  cmake --install build --prefix "$work/prefix" >/dev/null
else
  cmake -S . -B "$work/pjrt" -DCMAKE_BUILD_TYPE=Debug -DPJRT_LITE_BUILD_TESTS=OFF -DPJRT_LITE_BUILD_EXAMPLES=OFF \
    -DPJRT_LITE_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
  cmake --build "$work/pjrt" -j2 >/dev/null
  cmake --install "$work/pjrt" >/dev/null
fi
libdir=$(cd "$work/prefix" && dirname "$(find . -name libpjrt_lite_cpu_kernels.a | head -1)" | sed "s|^\./||")
test -f "$work/prefix/$libdir/cmake/pjrt_lite/pjrt_liteConfigVersion.cmake"
test -f "$work/prefix/include/pjrt_lite/cpu.hpp"
step "install"

# Steps 2 and 3 run in the background, beside each other and beside step 4, and step 5's two
# compilers beside each other: each of those is a configure and one or two translation units,
# which one after the other left a core idle for most of two minutes. Each writes its log to
# $work/<name>.log, printed at the end with the job's time (or its failure).
jobs_started=()
background() {  # background <name> <command...>
  ( t1=$SECONDS; "${@:2}"; echo "-- $1: $((SECONDS - t1)) s" ) >"$work/$1.log" 2>&1 &
  jobs_started+=("$!:$1")
}

# 2. pkg-config: the flags name the installed headers and Eigen, and compile a light TU; then
# pjrt_lite_cpu_kernels.pc builds and runs the whole consumer against the installed library.
export PKG_CONFIG_PATH="$work/prefix/$libdir/pkgconfig"
pkg_config_consumer() {
  flags=$(pkg-config --cflags pjrt_lite)
  echo "pkg-config --cflags pjrt_lite: $flags"
  case "$flags" in *"$work/prefix/$libdir/pkgconfig/../../include"*eigen3*) ;; *) echo "unexpected flags" >&2; exit 1 ;; esac
  # shellcheck disable=SC2086
  g++ -std=c++20 $flags -fsyntax-only tests/consumer/light.cpp
  # shellcheck disable=SC2046
  g++ -std=c++20 -fno-exceptions -fno-rtti tests/consumer/main.cpp tests/consumer/light.cpp \
    $(pkg-config --cflags --libs pjrt_lite_cpu_kernels) -o "$work/consumer-pkg-config"
  "$work/consumer-pkg-config"
}
background pkg-config pkg_config_consumer

# 3. The consumer, each way. The installed package links pjrt_lite::cpu_kernels and runs a whole
# program; add_subdirectory and FetchContent, whose headers are the same files, build the light
# consumer (no kernels, which would cost a minute each). The header-only way of compiling the
# kernels inline is the README build's examples/device_put.
commit=$(git rev-parse HEAD 2>/dev/null || echo HEAD)
consumer() {  # consumer <mode>
  local mode=$1 kernels=none
  [ "$mode" = package ] && kernels=library
  cmake -S tests/consumer -B "$work/consumer-$mode" -DCMAKE_BUILD_TYPE=Debug -DPJRT_LITE_CONSUMER_MODE="$mode" \
    -DPJRT_LITE_CONSUMER_KERNELS=$kernels \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DPJRT_LITE_SOURCE_DIR="$root" -DPJRT_LITE_GIT_TAG="$commit" >/dev/null
  cmake --build "$work/consumer-$mode" -j2 >/dev/null
  "$work/consumer-$mode/consumer"
}
for mode in package subdirectory fetchcontent; do
  background "consumer via $mode" consumer "$mode"
done

# 4. Every public installed header on its own (so each includes what it uses, and the install
# holds everything it includes), with clang++ -fsyntax-only, two at a time: a translation unit
# per header, declaring the kernels (PJRT_LITE_CPU_EXTERN_KERNELS) rather than compiling them.
# Internal headers (detail/ folders, IWYU-private) are compiled through the public headers that
# include them and all together in step 5; cpu_instantiate.hpp, which compiles every kernel, is
# left to the kernels library's build above, and mpi.hpp, which needs MPI's headers, to
# 50-mpi.sh.
# Most headers include ir/graph.hpp or at least core/dtype.hpp (with Eigen/Core), which took
# about 2 s and 1.5 s of each header's compile. Both are precompiled once, and a header's unit
# starts from the larger one that its own includes reach (the preprocessor's list, -MM): it so
# sees no declaration that it would not see compiled alone, only sooner. A header that the
# precompiled bases hold is compiled without them.
# shellcheck disable=SC2086 # word-split on purpose; $work holds no blanks (mktemp)
header_flags="-std=c++20 -fno-exceptions -fno-rtti -DPJRT_LITE_CPU_EXTERN_KERNELS -Wall -Wextra -Wpedantic -Werror
  -I$work/prefix/include -isystem /usr/include/eigen3"
bases="ir/graph core/dtype"  # the larger first
for base in $bases; do
  printf '#include <pjrt_lite/%s.hpp>\n' "$base" | clang++-14 $header_flags -x c++-header - -o "$work/${base%/*}_${base#*/}.pch"
done
header_alone() {  # header_alone <header>: compiles it on its own, included twice
  local deps base pch=""
  deps=$(printf '#include <%s>\n' "$1" | clang++-14 $header_flags -MM -x c++ -)
  for base in $bases; do
    if [ "$1" != "pjrt_lite/$base.hpp" ] && [[ "$deps" == *"/pjrt_lite/$base.hpp"* ]]; then
      pch="-include-pch $work/${base%/*}_${base#*/}.pch"
      break
    fi
  done
  printf '#include <%s>\n#include <%s>\n' "$1" "$1" | clang++-14 $header_flags $pch -fsyntax-only -x c++ - ||
    { echo "header $1 does not compile on its own" >&2; return 255; }
}
export -f header_alone
export work header_flags bases
(cd "$work/prefix/include" && find pjrt_lite -name '*.hpp' ! -name cpu_instantiate.hpp ! -name mpi.hpp ! -path '*/detail/*' | sort) |
  xargs -P2 -I{} bash -c 'header_alone "$1"' bash {}
step "each public installed header on its own, clang++-14 -fsyntax-only"

# 5. Every header in one TU, with both compilers, warnings as errors (Eigen's headers are
# system headers, as the CMake and pkg-config packages make them), in the extern-kernels mode.
# The headers that compile the kernels whenever they are included (cpu_instantiate.hpp and
# the CPU backend's detail/ headers, included here through the public ones) are left to the
# builds that compile them: the README build, whose g++ warnings fail CI (.ci/run), and the
# sanitizer build, clang++ with -Werror (30-sanitizers.sh). Compiling them here as well cost
# about 320 s of g++ CPU.
find include -name '*.hpp' ! -name cpu_instantiate.hpp ! -name mpi.hpp ! -path 'include/pjrt_lite/backends/cpu/detail/*' | sort |
  sed 's|^include/\(.*\)|#include <\1>|' >"$work/all_headers.cpp"
all_headers() {  # all_headers <compiler>
  "$1" -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -fno-exceptions -fno-rtti \
    -DPJRT_LITE_CPU_EXTERN_KERNELS -Iinclude -isystem /usr/include/eigen3 "$work/all_headers.cpp"
}
for cxx in g++ clang++-14; do
  background "all headers, $cxx -Wall -Wextra -Wpedantic -Werror" all_headers "$cxx"
done

failed=0
for job in "${jobs_started[@]}"; do
  if wait "${job%%:*}"; then
    cat "$work/${job#*:}.log"
  else
    echo "!! ${job#*:} failed:" >&2
    cat "$work/${job#*:}.log" >&2
    failed=1
  fi
done
[ "$failed" = 0 ]
step "waited for steps 2, 3 and 5"
