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

toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=(stable)

apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  if [ ! -f /tmp/.dyno-apt-updated ]; then
    $sudo apt-get update -qq >/dev/null 2>&1 && touch /tmp/.dyno-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null 2>&1
}

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
  elif command -v "llvm-profdata-$major" >/dev/null 2>&1 || apt_install "llvm-$major"; then
    echo "pgo: $tc uses llvm-profdata-$major (LLVM $llvm)"
  else
    echo "note: no llvm-profdata of LLVM $major for $tc: pgo variants will be refused, PGO tests skipped"
  fi
  if command -v "llvm-bolt-$major" >/dev/null 2>&1 || apt_install "bolt-$major"; then
    echo "bolt: llvm-bolt-$major"
  else
    echo "note: bolt-$major is not installable here: \"on+bolt\" variants will be refused, the BOLT test skipped"
  fi
done
exit 0
