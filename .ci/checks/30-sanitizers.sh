#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on),
# built with -fno-exceptions -fno-rtti (PJRT_LITE_NO_EXCEPTIONS=ON: the configuration game
# engines use), and the concurrency executable under ThreadSanitizer: the stress and lifetime
# tests, kernels split across the pool's threads (products, convolutions, fused loops,
# reductions) while other executions run, and grids of devices meeting in collectives. The
# rest of the suite under TSan took about 400 s more of CI (docs/reliability.md);
# `cmake --preset tsan` runs it all.
# Only the test executables are built, with clang++ at -O0 -g1: instrumented template-heavy
# code compiles about four times faster than at -O1, and clang compiles it in less than half
# of g++'s time (the kernel translation unit: 67 s against 147 s of CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends clang-14 libclang-rt-14-dev cmake make libeigen3-dev \
    doctest-dev >/dev/null
fi
# Makefiles: one make runs both builds below.
common=(-G "Unix Makefiles" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1"
        -DPJRT_LITE_BUILD_EXAMPLES=OFF -DPJRT_LITE_BUILD_BENCH=OFF -DPJRT_LITE_INSTALL=OFF)
t0=$SECONDS
step() { echo "-- $1: $((SECONDS - t0)) s"; t0=$SECONDS; }

# -no-pie: ctest starts the test executable once per test, over 500 times, and as a
# position-independent executable of this size (about 280 MB of instrumented code) each start
# applied some 3.5 million relocations first, 0.12 s of CPU against 0.07 s without (about 30 s
# of the suite's CPU). ThreadSanitizer needs PIE, so only this build goes without.
cmake -S . -B build-asan "${common[@]}" -DPJRT_LITE_SANITIZE=address,undefined -DPJRT_LITE_NO_EXCEPTIONS=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-no-pie >/dev/null
# Without the linalg kernels: the concurrency tests run none, and TSan builds a minute faster.
cmake -S . -B build-tsan "${common[@]}" -DPJRT_LITE_SANITIZE=thread -DPJRT_LITE_LINALG_KERNELS=OFF >/dev/null
# One make runs both builds and shares its two jobs between them: each build alone ends on its
# longest translation units and its link with a core idle, which the other's units now fill.
# At most two compilers run at once, as before (a kernel unit takes up to 4 GB).
cat >build-asan/both.mk <<'MAKE'
all: asan tsan
asan: ; +$(MAKE) -C build-asan pjrt_lite_tests pjrt_lite_concurrency_tests
tsan: ; +$(MAKE) -C build-tsan pjrt_lite_concurrency_tests
.PHONY: all asan tsan
MAKE
make -j2 --no-print-directory -f build-asan/both.mk 2>&1 | tee build-asan/build.log
step "ASan+UBSan (no exceptions) and TSan builds, side by side"
# clang's warnings in the library's headers, without exceptions, over every kernel and every
# instantiation the tests make (20-consumers.sh leaves the kernel-compiling headers to this
# build and the README's, whose g++ warnings fail CI the same way).
if grep -n -A3 'include/pjrt_lite/.*warning:' build-asan/build.log; then
  echo "clang++ warned in the library's headers (above)" >&2
  exit 1
fi
# allocator_may_return_null: the tests ask for terabytes on purpose and expect
# RESOURCE_EXHAUSTED, which needs a nothrow allocation to return null as it does without a
# sanitizer. The StableHLO corpus and its portable artifacts are left out where they are
# checked out beside this one, as in 40-fuzz.sh: a fresh machine has neither, so every machine
# runs the same tests here (the tests that need them, about 300 s of CPU under ASan, skip; the
# README build's suite runs them where they are).
# The MPI tests (registered where MPI is installed) are 50-mpi.sh's: this step builds only the
# two executables above, and Open MPI's own allocations would read as leaks.
PJRT_LITE_STABLEHLO_TESTDATA=/nonexistent PJRT_LITE_STABLEHLO_VHLO=/nonexistent \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 -E '^mpi:'
step "ASan+UBSan, no exceptions: the whole suite"

TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1 \
  ctest --test-dir build-tsan --output-on-failure -j2 -R '^(stress|lifetime|parallel kernels|collectives concurrency):'
step "TSan: the concurrency tests"
