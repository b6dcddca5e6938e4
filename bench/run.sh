#!/bin/sh
# Runs pjrt_lite_bench with JSON output and regenerates the results section of
# bench/RESULTS.md from it: pjrt_lite, its Eigen twin and, when the binary was built with
# Torch, LibTorch for every workload. The machine is shared, so each benchmark runs
# REPETITIONS times (5 by default) and the table shows medians.
#
#   bench/run.sh                      # build/ under the repository root
#   BUILD_DIR=out REPETITIONS=9 bench/run.sh --benchmark_filter=gemm
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
repetitions=${REPETITIONS:-5}
binary=$build/bench/pjrt_lite_bench
json=$build/bench/results.json
if [ ! -x "$binary" ]; then
  echo "run.sh: $binary not found; build it with: cmake -S . -B $build -DPJRT_LITE_BUILD_BENCH=ON && cmake --build $build -j2 --target pjrt_lite_bench" >&2
  exit 1
fi
if ! "$binary" --benchmark_list_tests | grep -q '/libtorch'; then
  echo "run.sh: $binary was built without Torch: the table will have no libtorch column" >&2
fi
load=$(uptime | sed 's/.*load average: //')
"$binary" --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json "$@" > /dev/null
command="./build/bench/pjrt_lite_bench --benchmark_repetitions=$repetitions --benchmark_report_aggregates_only=true --benchmark_format=json${*:+ $*}"
python3 "$here/results_table.py" "$json" "$here/RESULTS.md" "$command" "$load"
echo "run.sh: wrote $here/RESULTS.md from $json"
