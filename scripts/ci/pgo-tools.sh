#!/usr/bin/env bash
# Installs what `dyno tune` needs for `pgo = ["on"]` and `"on+bolt"` variants (and what the
# PGO tests of dyno-tune use when present; they skip with a note otherwise):
#   - an llvm-profdata of the same LLVM major version as rustc's: rustup's llvm-tools
#     component first, else Debian's llvm-<major> (rustc's raw profiles are only readable
#     by an llvm-profdata of its own LLVM);
#   - llvm-bolt and merge-fdata for "on+bolt": Debian's bolt-<major>.
# Never fails the caller: each missing piece is reported as a note.
# Usage: scripts/ci/pgo-tools.sh [TOOLCHAIN ...]   (default: stable)
set -uo pipefail
. "$(dirname "$0")/apt.sh"

toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=(stable)

for tc in "${toolchains[@]}"; do
  llvm=$(rustc +"$tc" -vV 2>/dev/null | sed -n 's/^LLVM version: //p')
  if [ -z "$llvm" ]; then
    echo "note: toolchain $tc is not installed; skipped"
    continue
  fi
  major=${llvm%%.*}
  host=$(rustc +"$tc" -vV | sed -n 's/^host: //p')
  sysroot=$(rustc +"$tc" --print sysroot)
  if [ -x "$sysroot/lib/rustlib/$host/bin/llvm-profdata" ] \
    || rustup component add llvm-tools --toolchain "$tc" >/dev/null 2>&1; then
    echo "pgo: $tc uses rustup's llvm-tools (LLVM $llvm)"
  elif command -v "llvm-profdata-$major" >/dev/null 2>&1 || apt_install --with-recommends "llvm-$major"; then
    echo "pgo: $tc uses llvm-profdata-$major (LLVM $llvm)"
  else
    echo "note: no llvm-profdata of LLVM $major for $tc: pgo variants will be refused, PGO tests skipped"
  fi
  if command -v "llvm-bolt-$major" >/dev/null 2>&1 || apt_install --with-recommends "bolt-$major"; then
    echo "bolt: llvm-bolt-$major"
  else
    echo "note: bolt-$major is not installable here: \"on+bolt\" variants will be refused, the BOLT test skipped"
  fi
done
exit 0
