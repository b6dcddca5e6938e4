#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on),
# built with -DPJRT_LITE_NO_EXCEPTIONS=ON where that option exists, and the concurrency tests
# (stress, lifetime) under ThreadSanitizer. Only the test executables are built (no header
# check, examples or benchmarks), at -O1, to keep CI within its budget.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends g++ cmake make libeigen3-dev xtl-dev doctest-dev >/dev/null
common=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DPJRT_LITE_BUILD_EXAMPLES=OFF
        -DPJRT_LITE_BUILD_BENCH=OFF)

step=$SECONDS
cmake -S . -B build-asan "${common[@]}" -DPJRT_LITE_SANITIZE=address,undefined -DPJRT_LITE_NO_EXCEPTIONS=ON
cmake --build build-asan -j2 --target pjrt_lite_tests pjrt_lite_concurrency_tests
echo "== asan build: $((SECONDS - step)) s"
step=$SECONDS
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2
echo "== asan tests: $((SECONDS - step)) s"

step=$SECONDS
cmake -S . -B build-tsan "${common[@]}" -DPJRT_LITE_SANITIZE=thread
cmake --build build-tsan -j2 --target pjrt_lite_concurrency_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ./build-tsan/tests/pjrt_lite_concurrency_tests
echo "== tsan build and tests: $((SECONDS - step)) s"
