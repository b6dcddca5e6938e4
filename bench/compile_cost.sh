#!/usr/bin/env bash
# Compile cost of pjrt_lite: CPU seconds (user + system, so a busy machine inflates them less
# than wall time) to compile a translation unit that includes one public header, and each
# example, with the flags a user's release build would use. Also says whether the header pulls
# in Eigen (Eigen/Core) and Eigen's Tensor module. Prints a Markdown table.
#
#   bench/compile_cost.sh [regex]      # only headers / examples whose path matches
#   CXX=clang++-14 bench/compile_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${CXX:-g++}
filter=${1:-.}
flags=(-std=c++20 -O2 -fno-exceptions -fno-rtti -Iinclude -isystem /usr/include/eigen3 -w)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpu_seconds() {  # cpu_seconds <extra flags...> <source>: compiles to an object, prints seconds
  /usr/bin/time -f "%U %S" -o "$work/time" "$cxx" "${flags[@]}" "$@" -c -o "$work/out.o"
  awk '{printf "%.1f", $1 + $2}' "$work/time"
}

echo "$cxx $("$cxx" -dumpversion), ${flags[*]}"
echo
echo "| translation unit | CPU s | Eigen/Core | Eigen Tensor |"
echo "|---|---:|:---:|:---:|"
for header in $(cd include && find pjrt_lite -name '*.hpp' | sort); do
  [[ "$header" =~ $filter ]] || continue
  echo "#include <$header>" >"$work/tu.cpp"
  deps=$("$cxx" "${flags[@]}" -M "$work/tu.cpp")
  core=no tensor=no
  grep -q 'Eigen/Core' <<<"$deps" && core=yes
  grep -q 'CXX11/Tensor' <<<"$deps" && tensor=yes
  echo "| \`#include <$header>\` | $(cpu_seconds "$work/tu.cpp") | $core | $tensor |"
done
# Examples as the build compiles them: all but device_put link pjrt_lite::cpu_kernels and are
# built with PJRT_LITE_CPU_EXTERN_KERNELS (declarations only); src/cpu_kernels.cpp is that
# library. tests/consumer/main.cpp is a user's file that compiles and runs a program: with the
# library and header-only.
for example in examples/*.cpp src/cpu_kernels.cpp tests/consumer/main.cpp; do
  [[ "$example" =~ $filter ]] || continue
  extra=() label=""
  case "$(basename "$example" .cpp)" in
    device_put) ;;
    cpu_kernels) extra=(-DPJRT_LITE_CPU_EXTERN_KERNELS) label=" (the library)" ;;
    *) extra=(-DPJRT_LITE_CPU_EXTERN_KERNELS) label=" (linking pjrt_lite::cpu_kernels)" ;;
  esac
  echo "| \`$example\`$label | $(cpu_seconds "${extra[@]}" "$example") | | |"
  case "$example" in
    *robot_control* | *stablehlo_run* | tests/consumer/main.cpp)
      echo "| \`$example\` (header-only: kernels inline) | $(cpu_seconds "$example") | | |" ;;
  esac
done
