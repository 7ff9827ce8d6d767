#!/usr/bin/env bash
# The fuzz targets of fuzz/ (docs/fuzzing.md), briefly: cargo-fuzz at a pinned version,
# one build of every target, then each target for FUZZ_SECONDS (default 6; 21 targets,
# about two minutes of fuzzing in all) from its committed seeds with a fixed -seed, so a
# run is repeatable. Without nightly or cargo-fuzz it prints a note and skips; a crash
# fails the run, with the input that made it kept under fuzz/artifacts/.
#
# Built with --sanitizer none and debug assertions: dyno's decoders are safe Rust
# (forbid(unsafe_code)), where AddressSanitizer has nothing to find that a panic does
# not show, and it roughly halves both the build and the executions per second;
# debug assertions keep integer overflow a crash, the class of bug safe Rust still has.
# 16 codegen units (cargo-fuzz's default is 1) make the build of the whole dependency
# tree about twice as fast on two cores, for somewhat slower executions: CI's run is a
# smoke test; the long runs of docs/fuzzing.md use the default.
set -uo pipefail
cd "$(dirname "$0")/../.."

CARGO_FUZZ_VERSION=0.13.1
SECONDS_PER_TARGET=${FUZZ_SECONDS:-6}
SEED=${FUZZ_SEED:-1}
FLAGS=(--sanitizer none --debug-assertions --codegen-units 16)

note() { echo "note: $1; the fuzz targets were not run"; exit 0; }

rustup run nightly rustc --version >/dev/null 2>&1 \
  || rustup toolchain install nightly --profile minimal >/dev/null 2>&1 \
  || note "no nightly toolchain (cargo-fuzz needs it)"
# `cargo +nightly fuzz` is a cargo subcommand installed apart from the toolchain: on a
# fresh machine with nightly it is "no such command" until this installs it.
found=$(cargo fuzz --version 2>/dev/null || true)
if ! grep -q " $CARGO_FUZZ_VERSION\$" <<<"$found"; then
  echo "cargo-fuzz $CARGO_FUZZ_VERSION is not installed (${found:-no cargo fuzz}): installing it (cargo install --locked, a few minutes)"
  t=$(date +%s)
  cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION" >/dev/null 2>&1 \
    || note "cargo-fuzz $CARGO_FUZZ_VERSION could not be installed"
  echo "cargo-fuzz $CARGO_FUZZ_VERSION installed in $(( $(date +%s) - t )) s"
fi

t=$(date +%s)
# The build lives outside the clone (like the CometBFT releases and the schema tools), so
# a second CI run on this machine rebuilds dyno's crates only, not the dependency tree
# (about 5 minutes of both cores the first time). FUZZ_TARGET_DIR moves it.
TARGET_DIR=${FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/fuzz-target}
cargo +nightly fuzz build "${FLAGS[@]}" --target-dir "$TARGET_DIR" \
  || { echo "error: the fuzz targets do not build"; exit 1; }
echo "fuzz targets built in $(( $(date +%s) - t )) s"

bin=$TARGET_DIR/x86_64-unknown-linux-gnu/release
mkdir -p fuzz/artifacts
failed=()
for target in $(cargo +nightly fuzz list); do
  work=$(mktemp -d)
  mkdir -p "fuzz/artifacts/$target"
  # New inputs go to the scratch folder: the committed seeds stay as they are.
  if "$bin/$target" "$work" "fuzz/corpus/$target" -seed="$SEED" \
       -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 \
       >"$work.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$')
    echo "fuzz $target: ${runs:-?} executions in ${SECONDS_PER_TARGET} s, no crash"
  else
    echo "error: fuzz $target crashed; the input is under fuzz/artifacts/$target/:"
    tail -n 30 "$work.log"
    failed+=("$target")
  fi
  rm -rf "$work" "$work.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: fuzz targets that crashed: ${failed[*]}"
  exit 1
fi
