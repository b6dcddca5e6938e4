#!/usr/bin/env bash
# Each libFuzzer target (StableHLO parser, executable deserializer, graph builder) for 60 s
# from its generated seeds and the kept regressions; any crash, leak, timeout or UB fails CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends clang-14 libclang-rt-14-dev libeigen3-dev xtl-dev >/dev/null
FUZZ_TIMEOUT=60 tests/fuzz/run.sh 60
