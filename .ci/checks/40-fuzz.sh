#!/usr/bin/env bash
# Fuzzing: the libFuzzer binary (StableHLO parser, executable deserializer, graph builder,
# portable-artifact reader)
# built at -O0 with ASan+UBSan, and the four targets run side by side for 60 s each from their
# generated seeds and the kept regressions; any crash, leak, timeout or UB fails CI.
# The random seed is fixed and the corpus starts empty every time: CI repeats mutations that
# were run for much longer before a change landed (docs/reliability.md), so it fails on what
# a change breaks rather than on a new find by chance. Longer runs: tests/fuzz/run.sh 1800.
# -O0 because the one translation unit builds fastest there; it links the kernels library of
# the ASan+UBSan build (30-sanitizers.sh) instead of compiling every kernel again.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends clang-14 libclang-rt-14-dev libeigen3-dev >/dev/null
fi
# The StableHLO test corpus is left out even where it is checked out beside this one: a fresh
# machine has none, and so that every machine runs the same inputs.
export PJRT_LITE_STABLEHLO_TESTDATA=/nonexistent
out="$PWD/build-fuzz-ci"
rm -rf "${out}/corpus" "${out}/seeds" "${out}/artifacts"
# The kernels come from the ASan+UBSan build of 30-sanitizers.sh when it is there.
kernels=$PWD/build-asan/libpjrt_lite_cpu_kernels.a
[ -f "$kernels" ] || kernels=
FUZZ_KERNELS="$kernels" FUZZ_SEED=1 FUZZ_PARALLEL=1 FUZZ_CFLAGS="-O0 -gline-tables-only" FUZZ_DIR="${out}" tests/fuzz/run.sh 60
