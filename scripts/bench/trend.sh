#!/usr/bin/env bash
# Detection and false-alarm rates of `dyno results trend`'s change-point detection on
# seeded synthetic histories (docs/benchmarks/trend.md, "Change points"): a 5% step under 3%
# Gaussian noise, the detector run as a CI job would, one appended run at a time; and
# stationary 100-run histories. E-Divisive at several p thresholds beside Mozilla
# Perfherder's moving-window t-test. Deterministic: the same seed prints the same table.
# Usage: scripts/bench/trend.sh [--trials N] [--seed S] [--step PCT] [--noise PCT] ...
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --release --quiet -p dyno-stats --example changepoint_eval -- "$@"
