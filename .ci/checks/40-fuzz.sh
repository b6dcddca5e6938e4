#!/usr/bin/env bash
# Fuzzing: the libFuzzer binary (StableHLO parser, executable deserializer, graph builder,
# portable-artifact reader) built at -O0 with ASan+UBSan, and the four targets run side by side
# for 45 s each from their generated seeds and the kept regressions; any crash, leak, timeout or
# UB fails CI. The four share the two cores (about 22 s of CPU each). The trade of 45 s against
# the 60 s before: 15 s of the CI budget for a quarter of each target's fixed sequence of
# mutations (on an idle development machine 60 s were about 2,700 parser inputs, 14,000
# deserializer inputs and 1,000 builder inputs). CI keeps the seeds, the kept regressions
# and the first three quarters of that sequence; a change that breaks a decoder only for what
# the last quarter would have reached is left to the long runs (docs/reliability.md).
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
# The StableHLO test corpus and its portable artifacts are left out even where they are checked
# out beside this one: a fresh machine has neither, and so every machine runs the same inputs
# (with the artifacts as seeds the bytecode target ran 35 inputs in a minute).
export PJRT_LITE_STABLEHLO_TESTDATA=/nonexistent PJRT_LITE_STABLEHLO_VHLO=/nonexistent
out="$PWD/build-fuzz-ci"
rm -rf "${out}/corpus" "${out}/seeds" "${out}/artifacts"
# The kernels come from the ASan+UBSan build of 30-sanitizers.sh when it is there.
kernels=$PWD/build-asan/libpjrt_lite_cpu_kernels.a
[ -f "$kernels" ] || kernels=
FUZZ_KERNELS="$kernels" FUZZ_SEED=1 FUZZ_PARALLEL=1 FUZZ_CFLAGS="-O0 -gline-tables-only" FUZZ_DIR="${out}" tests/fuzz/run.sh 45
