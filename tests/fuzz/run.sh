#!/usr/bin/env bash
# Builds the libFuzzer binary (tests/fuzz/fuzz.cpp, all targets) and runs each target for a
# given time.
#
#   tests/fuzz/run.sh [seconds per target] [target...]     (targets: parser deserialize builder bytecode)
#
# Needs clang++-14 with libFuzzer (Debian 12: clang-14 and libclang-rt-14-dev). Writes to
# $FUZZ_DIR (default build-fuzz/): bin/, corpus/<target>/ (kept between runs), artifacts/.
# A crashing input found here belongs in tests/fuzz/regressions/<target>/ once fixed: the
# normal suite replays those (tests/fuzz_regression_test.cpp).
# Seeds: each target's generated seeds, the kept regressions (tests/fuzz/regressions/<target>),
# for the parser the StableHLO corpus in $PJRT_LITE_STABLEHLO_TESTDATA (default
# ../shared/stablehlo-testdata) and for bytecode StableHLO's portable artifacts in
# $PJRT_LITE_STABLEHLO_VHLO (default ../shared/stablehlo-vhlo) when present. FUZZ_CFLAGS replaces the optimization flags
# (default -O1 -g; CI builds with -O0 to build fast), FUZZ_UNIT_TIMEOUT libFuzzer's per-input
# timeout in seconds (default 20); FUZZ_KERNELS a pjrt_lite::cpu_kernels library built with
# ASan+UBSan and without exceptions (CI passes the one its sanitizer check built), linked
# instead of compiling every kernel into the fuzz binary; FUZZ_PARALLEL=1 runs the targets at the same time; FUZZ_SEED
# fixes libFuzzer's random seed, so that a run repeats the mutations of an earlier one. Exits
# non-zero when a target finds a crash,
# and prints libFuzzer's final statistics (executions, time) per target.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(parser deserialize builder bytecode)
out="${FUZZ_DIR:-${root}/build-fuzz}"
cxx="${FUZZ_CXX:-clang++-14}"
testdata="${PJRT_LITE_STABLEHLO_TESTDATA:-${root}/../shared/stablehlo-testdata}"
vhlodata="${PJRT_LITE_STABLEHLO_VHLO:-${root}/../shared/stablehlo-vhlo}"
mkdir -p "${out}/bin" "${out}/artifacts"
launcher=()
command -v ccache >/dev/null && launcher=(ccache)

bin="${out}/bin/pjrt_lite_fuzz"
kernels=()
if [[ -n ${FUZZ_KERNELS:-} ]]; then
  # The library's consumers declare the kernels instead of compiling them (and it was built
  # with the test suite's EIGEN_RUNTIME_NO_MALLOC, which every user of its Eigen code shares).
  kernels=(-DPJRT_LITE_CPU_EXTERN_KERNELS -DEIGEN_RUNTIME_NO_MALLOC "${FUZZ_KERNELS}")
fi
echo "== building ${bin}${FUZZ_KERNELS:+ against ${FUZZ_KERNELS}}"
# shellcheck disable=SC2086
"${launcher[@]}" "${cxx}" -std=c++20 ${FUZZ_CFLAGS:--O1 -g} -fno-omit-frame-pointer -fno-exceptions -fno-rtti \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -pthread \
  -I"${root}/include" -I"${root}/tests/fuzz" -isystem /usr/include/eigen3 \
  "${root}/tests/fuzz/fuzz.cpp" "${kernels[@]}" -o "${bin}"

# One target: seeds, then libFuzzer for the given time. Returns non-zero on a finding.
fuzz_one() {
  local t=$1
  local corpus="${out}/corpus/${t}" seeds="${out}/seeds/${t}"
  mkdir -p "${corpus}" "${seeds}" "${out}/artifacts/${t}"
  PJRT_LITE_FUZZ_TARGET="${t}" PJRT_LITE_FUZZ_WRITE_SEEDS="${seeds}" "${bin}" >/dev/null 2>&1 || true
  cp -n "${root}/tests/fuzz/regressions/${t}/"* "${seeds}/" 2>/dev/null || true
  rm -f "${seeds}/README"
  if [[ ${t} == parser && -d ${testdata} && -z $(ls -A "${corpus}") ]]; then
    find "${testdata}" -name '*.mlir' -size -64k -exec cp -n {} "${seeds}/" \;
  fi
  if [[ ${t} == bytecode && -d ${vhlodata} && -z $(ls -A "${corpus}") ]]; then
    find "${vhlodata}" -name '*.mlir.bc' -size -64k -exec cp -n {} "${seeds}/" \;
  fi
  echo "== fuzzing ${t} for ${seconds} s"
  if ! PJRT_LITE_FUZZ_TARGET="${t}" "${bin}" "${corpus}" "${seeds}" -max_total_time="${seconds}" \
      -timeout="${FUZZ_UNIT_TIMEOUT:-20}" -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
      ${FUZZ_SEED:+-seed="${FUZZ_SEED}"} \
      -artifact_prefix="${out}/artifacts/${t}/" 2>"${out}/${t}.log"; then
    echo "!! ${t}: libFuzzer found a problem; input kept in ${out}/artifacts/${t}/"
    tail -60 "${out}/${t}.log"
    return 1
  fi
}

status=0
if [[ -n ${FUZZ_PARALLEL:-} ]]; then
  # All targets at once, each for the whole time: the wall time of one.
  pids=()
  for t in "${targets[@]}"; do fuzz_one "${t}" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "${pid}" || status=1; done
else
  for t in "${targets[@]}"; do fuzz_one "${t}" || status=1; done
fi
for t in "${targets[@]}"; do
  echo "== ${t}:"
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^Done [0-9]+ runs' "${out}/${t}.log" || true
done
exit "${status}"
