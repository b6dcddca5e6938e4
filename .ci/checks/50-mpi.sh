#!/usr/bin/env bash
# Processes over MPI: installs Open MPI, configures the README build again (it then finds MPI
# and adds pjrt_lite::mpi and the MPI test), builds the MPI test executable alone (it links the
# kernels library of the README build, so it is one translation unit) and runs it as ctest
# does, under mpirun with 2 processes; g++'s warnings fail this step as they fail the README
# build. pjrt_lite/mpi.hpp, which 20-consumers.sh leaves here (it needs MPI's headers), is also
# compiled on its own with clang++ -Werror, without exceptions or RTTI.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends libopenmpi-dev openmpi-bin clang-14 g++ cmake make libeigen3-dev \
    doctest-dev >/dev/null
fi
t0=$SECONDS
step() { echo "-- $1: $((SECONDS - t0)) s"; t0=$SECONDS; }
# Run alone, the script configures the README build itself.
mkdir -p build
cmake -S . -B build >build/mpi-configure.log
grep -q "pjrt_lite_mpi_tests" build/tests/Makefile || { cat build/mpi-configure.log; echo "MPI was not found" >&2; exit 1; }
cmake --build build -j2 --target pjrt_lite_mpi_tests 2>&1 | tee build/mpi-build.log
if grep -n -B24 -A3 'warning:' build/mpi-build.log; then
  echo "the MPI test's build printed the warnings above" >&2
  exit 1
fi
step "build the MPI test"
ctest --test-dir build --output-on-failure -R '^mpi:'
step "mpirun -np 2"
# shellcheck disable=SC2046 # word-split on purpose: the MPI compile flags
printf '#include <pjrt_lite/mpi.hpp>\n#include <pjrt_lite/mpi.hpp>\n' |
  clang++-14 -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -fno-exceptions -fno-rtti \
    -DPJRT_LITE_CPU_EXTERN_KERNELS -DOMPI_SKIP_MPICXX -Iinclude -isystem /usr/include/eigen3 \
    $(mpicc --showme:compile | sed 's/-I/-isystem /g') -x c++ -
step "pjrt_lite/mpi.hpp alone, clang++-14 -Werror"
