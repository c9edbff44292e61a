#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan + UBSan, -DSEED_FUZZ=ON) and run each one for a
# bounded time on a copy of its committed corpus (tests/fuzz/corpus/<name>/, which stays
# untouched). Fails when a target crashes, leaks, times out on an input or breaks an
# invariant; the input that did it is kept under the work directory and named in the log.
# Prints the executions of every target.
#
# Environment: FUZZ_SECONDS (per target, default 30), FUZZ_SEED (default 1), FUZZ_BUILD (default build-fuzz),
# FUZZ_TARGETS (default: all), FUZZ_RSS_MB (default 2048), FUZZ_TIMEOUT_S (per input,
# default 10), FUZZ_WORK (default $FUZZ_BUILD/fuzz-work).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-30}
build=${FUZZ_BUILD:-build-fuzz}
targets=${FUZZ_TARGETS:-wire weights job config tokenizer safetensors remote skill reply}
rss=${FUZZ_RSS_MB:-2048}
per_input=${FUZZ_TIMEOUT_S:-10}
# A fixed seed: every run replays the same mutations from the committed corpus (only how
# far it gets depends on the machine), so a finding reproduces and CI does not flake on
# a new random walk. FUZZ_SEED=0 lets libFuzzer draw one.
seed=${FUZZ_SEED:-1}
work=${FUZZ_WORK:-$build/fuzz-work}

command -v clang >/dev/null || { echo "run.sh: clang is not installed (deploy/install.sh)" >&2; exit 1; }
CC=clang cmake -S . -B "$build" -DSEED_FUZZ=ON -DSEED_WERROR=ON -DCMAKE_BUILD_TYPE=Sanitize >/dev/null
bins=()
for t in $targets; do bins+=("${t}_fuzz"); done
cmake --build "$build" -j"$(nproc)" --target "${bins[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
rm -rf "$work"
mkdir -p "$work"
failed=()
summary=""
for t in $targets; do
  corpus="$work/$t/corpus"
  mkdir -p "$corpus" "$work/$t/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  log="$work/$t/log"
  rc=0
  "$build/fuzz/${t}_fuzz" "$corpus" -max_total_time="$seconds" -rss_limit_mb="$rss" \
    -timeout="$per_input" -max_len=65536 -print_final_stats=1 -seed="$seed" \
    -artifact_prefix="$work/$t/artifacts/" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line=$(printf '%-12s %10s executions in %ss' "$t" "${execs:-?}" "$seconds")
  if [ "$rc" -ne 0 ]; then
    line="$line  FAILED (rc $rc): $(ls "$work/$t/artifacts" | tr '\n' ' ')"
    failed+=("$t")
    tail -n 60 "$log" >&2
  fi
  echo "fuzz: $line"
  summary+="$line"$'\n'
done
printf '\nfuzz summary (%s s per target):\n%s' "$seconds" "$summary"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs under $work/<target>/artifacts; add each to" \
       "tests/fuzz/corpus/<target>/ as a regression once fixed)" >&2
  exit 1
fi
