#!/usr/bin/env bash
# The battery of bad inputs a hostile or careless user tried (issue 47), replayed against
# a built dyno: one line per case (name, expected exit code, exit code got, OK or FAIL),
# and exit 1 when any case differs. It builds nothing: DYNO names the binary (default
# target/debug/dyno, which allows itself to run as a debug build here). Everything it
# makes lives in one temporary directory; every port is on loopback. docs/output.md
# states the contract these cases hold.
#
#   scripts/hostile/battery.sh                 # after cargo build -p dyno
#   DYNO=target/release/dyno scripts/hostile/battery.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
DYNO=${DYNO:-target/debug/dyno}
if [[ ! -x $DYNO ]]; then
  echo "battery: no dyno binary at $DYNO (build it, or set DYNO)" >&2
  exit 2
fi
DYNO=$(realpath "$DYNO")
export DYNO_ALLOW_DEBUG_BUILD=1 NO_COLOR=1
unset DYNO_DB PGPASSWORD
ROOT=$(pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/dyno-battery.XXXXXX")
HOLDER=
cleanup() {
  [[ -n $HOLDER ]] && kill "$HOLDER" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
cd "$T"
failed=0

# report NAME EXPECTED GOT [why]: one line, and a failure counted.
report() {
  local verdict=OK
  [[ $2 == "$3" ]] || { verdict=FAIL; failed=$((failed + 1)); }
  printf '%-58s expected %-3s got %-3s %s%s\n' "$1" "$2" "$3" "$verdict" "${4:+  ($4)}"
}

# case_ NAME EXPECTED PATTERN -- COMMAND...: runs COMMAND (stdin empty, 60 s at most);
# the case holds when it exits EXPECTED and its stderr holds PATTERN (grep -E; empty:
# anything). A right code with the wrong message is shown as the code with a `!`.
case_() {
  local name=$1 want=$2 pattern=$3
  shift 4
  timeout 60 "$@" </dev/null >"$T/out" 2>"$T/err"
  local got=$?
  if [[ $got == "$want" && -n $pattern ]] && ! grep -Eq -- "$pattern" "$T/err"; then
    report "$name" "$want" "$got!" "stderr lacks /$pattern/: $(head -c 160 "$T/err" | tr '\n' ' ')"
    return
  fi
  report "$name" "$want" "$got"
}

skip() { printf '%-58s SKIP  (%s)\n' "$1" "$2"; }

# A loopback TCP port held open by another process, for the "port in use" cases.
hold_port() {
  command -v python3 >/dev/null || return 1
  python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$T/held" &
  HOLDER=$!
  for _ in $(seq 50); do [[ -s $T/held ]] && break; sleep 0.1; done
  [[ -s $T/held ]]
}

# A free loopback port (bound and released).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The slowest case (a QUIC handshake timing out) runs beside the others.
"$DYNO" node genesis --validators n1=1 --accounts 8 --slot-ms 500 --start-in 2 \
  --out genesis.toml >/dev/null 2>&1
dead_target=
if command -v python3 >/dev/null; then
  dead_target="127.0.0.1:$(free_port)"
  (timeout 90 "$DYNO" load --genesis genesis.toml --target "$dead_target" --duration 1 \
    --rate 10 >/dev/null 2>"$T/dead.err"; echo $? >"$T/dead.rc") &
  dead_pid=$!
fi

# Usage and input errors: exit 2, naming the flag, file, line or key.
case_ "an unknown flag" 2 "unexpected argument" -- "$DYNO" --no-such-flag
case_ "machine --only an unknown metric" 2 "unknown metric" -- "$DYNO" machine --only nope
case_ "machine --only the name its error suggests" 0 "" -- \
  "$DYNO" machine --only BLAKE2-256-Parallel-N --help
case_ "node genesis --accounts 0" 2 "^error: --accounts 0:" -- \
  "$DYNO" node genesis --validators n1=1 --accounts 0 --out g2.toml
case_ "node genesis --slot-ms 0" 2 "^error: --slot-ms 0:" -- \
  "$DYNO" node genesis --validators n1=1 --slot-ms 0 --out g2.toml
case_ "node genesis over an existing file" 2 "exists" -- \
  "$DYNO" node genesis --validators n1=1 --out genesis.toml
case_ "load --duration 1e12" 2 "--duration" -- \
  "$DYNO" load --genesis genesis.toml --target 127.0.0.1:9 --duration 1e12
case_ "load --genesis a missing file" 2 "missing.toml" -- \
  "$DYNO" load --genesis missing.toml --target 127.0.0.1:9

layout() { # layout FILE FROM TO: the two-tile example with one edit
  sed -e "s|$2|$3|" -e 's|127.0.0.1:7999|127.0.0.1:0|' \
    -e "s|name = \"two-tile\"|name = \"battery-$$\"|" \
    "$ROOT/examples/pipeline/two-tile.toml" >"$1"
}
layout bad-name.toml 'name = "two-tile"' 'name = "bad/name"'
case_ "pipeline run: workspace.name with a slash" 2 "bad-name.toml:26:1: key .workspace.name." -- \
  "$DYNO" pipeline run --config bad-name.toml --duration 1 --no-save
layout frag.toml 'frag_size = 64' 'frag_size = 100000'
case_ "pipeline run: frag_size over the MTU" 2 "frag.toml:32:1: key .synthetic.frag_size." -- \
  "$DYNO" pipeline run --config frag.toml --duration 1 --no-save
layout kind.toml 'kind = "sink"' 'kind = "blackhole"'
case_ "pipeline run: kind = blackhole" 2 'key .layout.tiles\[1\].kind.: unknown tile kind "blackhole"' -- \
  "$DYNO" pipeline run --config kind.toml --duration 1 --no-save
awk '/^\[/ { skip = ($0 ~ /^\[links\]/) } !skip' "$ROOT/examples/cluster/mini-torus.toml" >nolinks.toml
case_ "cluster check: a file without [links]" 2 "nolinks.toml: no .links." -- \
  "$DYNO" cluster check nolinks.toml
printf 'rounds = 1\nrounds = 2\n' >dup.toml
case_ "compare run: a key given twice" 2 "dup.toml:2" -- "$DYNO" compare run dup.toml --no-save

# Comparison files: placeholders, bounds and names are checked before anything runs.
# cmpfile FILE SUBJECT_LINES WORKLOAD_LINES: two `true` subjects and one workload, with
# extra lines in the first subject and in the workload (a `name =` there replaces it).
cmpfile() {
  {
    printf '[[subject]]\n%s\n' "$2"
    grep -q '^name' <<<"$2" || echo 'name = "a"'
    printf 'command = ["true"]\n[[subject]]\nname = "b"\ncommand = ["true"]\n'
    printf '[[workload]]\n%s\n' "$3"
    grep -q '^name' <<<"$3" || echo 'name = "w"'
    grep -q '^rate' <<<"$3" || echo 'rate = 1'
    grep -q '^measure_s' <<<"$3" || echo 'measure_s = 2'
  } >"$1"
}
cmpfile ph.toml 'env = { X = "--nodes={nodes}" }' ''
case_ "compare run: an unknown {placeholder} in env" 2 'ph.toml:2:[0-9]+: key .subject\[0\].env.X.: .\{nodes\}. is no placeholder' -- \
  "$DYNO" compare run ph.toml --no-save
cmpfile ph-args.toml '' 'args = ["--tps", "{tps}"]'
case_ "compare run: an unknown {placeholder} in workload args" 2 'key .workload\[0\].args.: .\{tps\}. is no placeholder' -- \
  "$DYNO" compare run ph-args.toml --no-save
cmpfile ph-ready.toml 'ready = { http = "http://127.0.0.1:9/{rate}" }' ''
case_ "compare run: {rate} in a readiness URL" 2 'key .subject\[0\].ready.http.' -- \
  "$DYNO" compare run ph-ready.toml --no-save

cmpfile big-window.toml '' 'measure_s = 1e9'
case_ "compare run: measure_s = 1e9" 2 'big-window.toml:[0-9]+:[0-9]+: key .workload\[0\].measure_s.: .* give 2 to 86400 seconds' -- \
  "$DYNO" compare run big-window.toml --no-save
cmpfile big-warmup.toml '' 'warmup_s = 1e9'
case_ "compare run: warmup_s = 1e9" 2 'key .workload\[0\].warmup_s.: .* give 0 to 86400' -- \
  "$DYNO" compare run big-warmup.toml --no-save
cmpfile big-rate.toml '' 'rate = 1e12'
case_ "compare run: rate = 1e12" 2 'key .workload\[0\].rate.: .* out of range' -- \
  "$DYNO" compare run big-rate.toml --no-save
cmpfile ok.toml '' ''
case_ "compare run --rounds 4000000000" 2 "--rounds.*give 1 to 10000" -- \
  "$DYNO" compare run ok.toml --no-save --rounds 4000000000
cmpfile long-name.toml "name = \"$(printf 'x%.0s' $(seq 100000))\"" ''
case_ "compare run: a 100 KB subject name" 2 'key .subject\[0\].name.: .* 100000 characters long' -- \
  "$DYNO" compare run long-name.toml --no-save
cmpfile nul-name.toml 'name = "a\u0000b"' ''
case_ "compare run: a NUL in a subject name" 2 'key .subject\[0\].name.: .*U\+0000' -- \
  "$DYNO" compare run nul-name.toml --no-save
cmpfile bidi-name.toml '' 'name = "w\u202Eevil"'
case_ "compare run: a bidi override in a workload name" 2 'key .workload\[0\].name.: .*U\+202E' -- \
  "$DYNO" compare run bidi-name.toml --no-save

# The results store.
mkdir dbdir
case_ "results list --db a directory" 2 "is a directory" -- "$DYNO" results list --db dbdir
case_ "results list --db a missing file" 2 "does not exist" -- "$DYNO" results list --db none.db
echo "not sqlite" >foreign.db
case_ "results list --db somebody else's file" 2 "not a dyno results store" -- \
  "$DYNO" results list --db foreign.db
case_ "results list --db postgres://%%%" 2 "invalid URL" -- \
  "$DYNO" results list --db 'postgres://%%%'
case_ "results list --db an unreachable PostgreSQL" 3 "cannot reach" -- \
  "$DYNO" results list --db postgres://dyno@127.0.0.1:1/dyno
"$DYNO" results migrate --db store.db >/dev/null 2>&1
if command -v sqlite3 >/dev/null; then
  cp store.db old.db
  sqlite3 old.db "DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid;
    DROP TABLE sample_batches; DROP INDEX hosts_machine; PRAGMA user_version = 1;"
  case_ "results list on an older-schema store" 2 "older dyno schema.*dyno results migrate" -- \
    "$DYNO" results list --db old.db
  case_ "results migrate, then it reads" 0 "" -- "$DYNO" results migrate --db old.db
else
  skip "results list on an older-schema store" "no sqlite3 here"
fi

# Standard output: full is a runtime failure, closed ends quietly.
case_ "results list --format json > /dev/full" 3 "No space left" -- \
  sh -c '"$0" results list --db store.db --format json >/dev/full' "$DYNO"
case_ "man > /dev/full" 3 "No space left" -- sh -c '"$0" man >/dev/full' "$DYNO"
case_ "results list --format json | (closed at once)" 0 "" -- \
  sh -c '"$0" results list --db store.db --format json | true; exit "$(( $? ))"' "$DYNO"
"$DYNO" man | head -c 0
report "man | head -c 0 (a closed pipe)" 0 "${PIPESTATUS[0]}"

# Outputs write through special files and symlinks, never replacing them.
: >target.csv
ln -s target.csv link.csv
case_ "results export -o a symlink" 0 "" -- "$DYNO" results export --db store.db -o link.csv
[[ -L link.csv ]] && got=0 || got=1
report "  ... the symlink is still a symlink" 0 "$got"
case_ "results export -o /dev/null" 0 "" -- "$DYNO" results export --db store.db -o /dev/null
[[ -c /dev/null ]] && got=0 || got=1
report "  ... /dev/null is still a device" 0 "$got"
case_ "results export -o a directory" 2 "" -- "$DYNO" results export --db store.db -o dbdir

# Ports: one another process holds is a runtime failure.
if hold_port; then
  held=$(cat "$T/held")
  printf 'id = "n1"\ngenesis = "genesis.toml"\npeer_listen = "127.0.0.1:%s"\n' "$held" >busy.toml
  case_ "node run: the peer port is taken" 3 "127.0.0.1:$held" -- \
    "$DYNO" node run --config busy.toml --duration 1
  case_ "serve --listen a taken port" 3 "--listen 127.0.0.1:$held" -- \
    "$DYNO" serve --db store.db --listen "127.0.0.1:$held"
else
  skip "ports another process holds" "no python3 to hold one"
fi

# Signals: a node stopped by SIGINT, SIGTERM or SIGHUP exits 128 + N.
printf 'id = "n1"\ngenesis = "genesis.toml"\npeer_listen = "127.0.0.1:0"\n' >n1.toml
for sig in INT:130 TERM:143 HUP:129; do
  "$DYNO" node run --config n1.toml --quiet >/dev/null 2>&1 &
  pid=$!
  sleep 1
  kill -"${sig%%:*}" "$pid"
  wait "$pid"
  report "node run, then SIG${sig%%:*}" "${sig##*:}" $?
done

if [[ -n $dead_target ]]; then
  wait "$dead_pid"
  got=$(cat "$T/dead.rc")
  if [[ $got == 3 ]] && ! grep -q -- "--target" "$T/dead.err"; then got="3!"; fi
  report "load to a target nothing listens on" 3 "$got"
else
  skip "load to a target nothing listens on" "no python3 to find a free port"
fi

echo "battery: $failed case(s) failed"
[[ $failed == 0 ]]
