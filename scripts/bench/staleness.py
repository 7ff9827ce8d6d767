#!/usr/bin/env python3
"""Which headline figures of BENCHMARKS.md are stale: for every row, the commits since the
one it was measured at that touched the code behind it, `git log --no-merges <commit>..HEAD
-- <paths>` (the paths per row are in scripts/bench/rows.tsv, keyed by the table's first
column). Prints a report and the stale rows to re-measure on a quiet machine, with their
commands. A report only: it exits 0 whatever it finds (2 on bad usage or a table it cannot
read).

    python3 scripts/bench/staleness.py           # the report
    python3 scripts/bench/staleness.py --write   # also rewrite the table's status column

With --write the "status" column says `current` or `**stale**: N commits (newest first)`,
with "(busy machine: re-measure quietly)" for a figure whose machine was busy, or
`**to be measured**` for a row whose value says it is not measured yet; its header names
the commit it was computed at. All three kinds are in the list to (re-)measure.

A commit someone has read is listed in scripts/bench/reviewed.tsv,
`ROWS<TAB>COMMIT<TAB>VERDICT<TAB>WHY` (ROWS: a row id, several separated by commas, or `*`
for every row whose paths the commit touches). VERDICT `holds`: the commit does not move
the figure (a move, a refactor, a fix elsewhere in a crate): it no longer makes the row
stale, and the status says how many later commits were read. VERDICT `moves`: it does:
the row stays stale and its status says why (a later line for the same row and commit
wins over an earlier one). A commit nobody listed counts as before, so
a new commit touching a row's paths makes it stale again. A row's third column in
rows.tsv, when present, says why a stale row is not re-measured here (it needs a quiet
machine, 16 cores...); the status and the report repeat it.
"""

import os
import re
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(ROOT, "BENCHMARKS.md")
ROWS = os.path.join(ROOT, "scripts", "bench", "rows.tsv")
REVIEWED = os.path.join(ROOT, "scripts", "bench", "reviewed.tsv")
SHOWN = 4  # commits named in a status cell; the rest are counted


def git(*args):
    return subprocess.run(
        ["git", "-C", ROOT, *args], capture_output=True, text=True, check=False
    )


def fail(message):
    print(f"{sys.argv[0]}: {message}", file=sys.stderr)
    sys.exit(2)


def read_paths():
    """({row: [paths]}, {row: why it is not re-measured here}) from rows.tsv."""
    paths, notes = {}, {}
    with open(ROWS, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) not in (2, 3) or not parts[1].split():
                fail(f"{ROWS}:{n}: expected ID<TAB>PATHS[<TAB>NOTE]")
            key = parts[0].strip()
            paths[key] = parts[1].split()
            if len(parts) == 3 and parts[2].strip():
                notes[key] = parts[2].strip()
    return paths, notes


def read_reviewed(rows):
    """{row: {short commit: (verdict, why)}} from reviewed.tsv (absent: none). A line of
    three fields (the file's first format) is a `holds`."""
    reviewed = {}
    if not os.path.exists(REVIEWED):
        return reviewed
    with open(REVIEWED, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                parts = [parts[0], parts[1], "holds", parts[2]]
            if len(parts) != 4 or parts[2] not in ("holds", "moves") or not parts[3].strip():
                fail(f"{REVIEWED}:{n}: expected ROWS<TAB>COMMIT<TAB>holds|moves<TAB>WHY")
            full = git("rev-parse", "--short", f"{parts[1]}^{{commit}}").stdout.strip()
            if not full:
                fail(f"{REVIEWED}:{n}: {parts[1]} is not a commit of this repository")
            keys = list(rows) if parts[0].strip() == "*" else parts[0].split(",")
            for key in keys:
                key = key.strip()
                if key not in rows:
                    fail(f"{REVIEWED}:{n}: no row `{key}` in {os.path.relpath(ROWS, ROOT)}")
                reviewed.setdefault(key, {})[full] = (parts[2], parts[3].strip())
    return reviewed


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def headline_table(lines):
    """(index of the header line, header cells, [(line index, cells)]) of the first table
    whose first column is `row`."""
    for i, line in enumerate(lines):
        if line.startswith("|") and cells(line)[0] == "row":
            header = cells(line)
            rows = []
            for j in range(i + 2, len(lines)):
                if not lines[j].startswith("|"):
                    break
                rows.append((j, cells(lines[j])))
            return i, header, rows
    fail(f"{BENCHMARKS}: no table whose first column is `row`")


def column(header, prefix):
    for k, name in enumerate(header):
        if name.startswith(prefix):
            return k
    fail(f"{BENCHMARKS}: the headline table has no `{prefix}` column")


def since(commits, paths):
    """The commits after all of `commits` that touched `paths`, newest first, or None when
    one of `commits` is not in this repository."""
    for c in commits:
        if git("cat-file", "-e", f"{c}^{{commit}}").returncode != 0:
            return None
    out = git("log", "--no-merges", "--format=%h %s", "HEAD", "--not", *commits, "--", *paths)
    return [l for l in out.stdout.splitlines() if l.strip()]


def status_cell(log, held, moved, note):
    """The status of a row: `log` the commits since that count (newest first), `held` how
    many later ones were read and hold the figure, `moved` {commit: why} of those read that
    move it, `note` why a stale row is not re-measured here."""
    if log is None:
        return "unknown: its commit is not in this repository"
    if not log:
        if not held:
            return "current"
        return (
            f"current: {held} later commit{'s' if held > 1 else ''} read, none moves the "
            "figure (scripts/bench/reviewed.tsv)"
        )
    cell = f"**stale**: {len(log)} commit{'s' if len(log) > 1 else ''} since"
    if moved:
        # Read and found to move the figure: those say why; the others need not be read.
        cell += f"; moved by {', '.join(moved)} (why: scripts/bench/reviewed.tsv)"
    else:
        shown = [l.split()[0] for l in log]
        more = f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN else ""
        cell += f" ({', '.join(shown[:SHOWN])}{more})"
    if note:
        cell += f"; {note}"
    return cell


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the report quietly
    write = "--write" in sys.argv[1:]
    unknown = [a for a in sys.argv[1:] if a != "--write"]
    if unknown:
        fail(f"unknown argument {unknown[0]!r} (usage: {sys.argv[0]} [--write])")
    head = git("rev-parse", "--short", "HEAD").stdout.strip() or "HEAD"
    paths, notes = read_paths()
    reviewed = read_reviewed(paths)
    lines = open(BENCHMARKS, encoding="utf-8").read().split("\n")
    h, header, rows = headline_table(lines)
    c_value, c_commit, c_machine = (
        column(header, "value"),
        column(header, "commit"),
        column(header, "machine"),
    )
    c_command, c_status = column(header, "command"), column(header, "status")
    stale = []
    print(f"BENCHMARKS.md headline rows at {head} (paths: scripts/bench/rows.tsv)")
    for j, row in rows:
        key = row[0]
        if key not in paths:
            print(f"  {key}: no paths in scripts/bench/rows.tsv; not checked")
            continue
        commits = re.findall(r"\b[0-9a-f]{7,40}\b", row[c_commit])
        if not commits:
            print(f"  {key}: no commit in its `commit` cell; not checked")
            continue
        if "to be measured" in row[c_value]:
            print(f"  {key}: not measured yet (its value says so)")
            stale.append((key, row[c_command]))
            if write:
                row[c_status] = "**to be measured**" + (f": {notes[key]}" if key in notes else "")
                lines[j] = "| " + " | ".join(row) + " |"
            continue
        log = since(commits, paths[key])
        busy = "busy" in row[c_machine]
        ok = reviewed.get(key, {})
        held = [l for l in (log or []) if ok.get(l.split()[0], ("",))[0] == "holds"]
        if log is not None:
            log = [l for l in log if l not in held]
        moved = {
            l.split()[0]: ok[l.split()[0]][1]
            for l in (log or [])
            if l.split()[0] in ok
        }
        cell = status_cell(log, len(held), moved, notes.get(key) if log else None)
        if busy:
            # A lower bound with a wide spread: a quiet machine should measure it again.
            cell += " (busy machine: re-measure quietly)"
        print(f"  {key} (measured at {', '.join(commits)}): {cell.replace('**', '')}")
        for c, why in moved.items():
            print(f"      read, moves it: {c} ({why})")
        for l in [l for l in (log or []) if l.split()[0] not in moved][:SHOWN]:
            print(f"      not read yet: {l}")
        for l in held:
            print(f"      read, holds: {l.split()[0]} ({ok[l.split()[0]][1]})")
        if log or busy:
            stale.append((key, row[c_command]))
        if write:
            row[c_status] = cell
            lines[j] = "| " + " | ".join(row) + " |"
    if stale:
        print(
            f"{len(stale)} of {len(rows)} rows to (re-)measure on a quiet machine "
            "(stale, never measured, or measured on a busy one):"
        )
        for key, command in stale:
            print(f"  {key}: {command.replace('`', '')}")
    else:
        print(f"all {len(rows)} rows current")
    if write:
        header[c_status] = f"status at {head}"
        lines[h] = "| " + " | ".join(header) + " |"
        with open(BENCHMARKS, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        print(f"wrote the status column of {os.path.relpath(BENCHMARKS, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
