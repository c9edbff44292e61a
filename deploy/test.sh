#!/usr/bin/env bash
# Set up (deploy/install.sh), build with ASan+UBSan, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install.sh
# Formatting first: clang-format --dry-run over every tracked C and CUDA file (the generated
# protobuf-c code lives in the build folder, never in the tree, so nothing is left out).
git ls-files -z '*.c' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format --dry-run -Werror
build=${SEED_TEST_BUILD:-build-test}
# CI treats warnings as errors (SEED_WERROR); a user's build does not.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Sanitize -DSEED_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
(cd "$build" && ctest --output-on-failure --timeout 1200 "$@")
# Every parser of outside bytes under libFuzzer, FUZZ_SECONDS (30) each (tests/fuzz).
[ "${SEED_SKIP_FUZZ:-0}" = "1" ] || tests/fuzz/run.sh
