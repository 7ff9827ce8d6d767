//! Standard output closed or full, for every command that prints (docs/output.md): a
//! closed pipe (`| head` done reading) ends the command quietly with the exit code it
//! would have had, never a panic or a death by SIGPIPE; a device that takes nothing
//! (`> /dev/full`) is a runtime failure, exit 3 with one line on stderr naming
//! standard output.

use crate::harness::served::{kinds, plant, three_runs};
use crate::harness::{
    dyno_process, heavy, with_output_closed, with_stdout_closed, with_stdout_full, write,
};
use std::path::{Path, PathBuf};

/// What the cases read: a store with a history of eight machine runs and a comparison
/// (run ids 9..), a cluster file, a tune study and a two-tile pipeline layout.
struct Fixtures {
    dir: tempfile::TempDir,
}

impl Fixtures {
    fn new() -> Fixtures {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.db");
        three_runs(&db);
        let mut store = dyno_store::Store::open(&db).unwrap();
        for i in 0..5 {
            let t = 1_795_300_000.0 + 86_400.0 * f64::from(i);
            plant(
                &mut store,
                "bench-01",
                "bench-01",
                t,
                &[1.0e9, 1.01e9, 0.99e9],
            );
        }
        kinds::comparison(&mut store, dir.path(), "cmp", 1_796_000_000.0, 1.0);
        drop(store);
        let f = Fixtures { dir };
        let quiet = |args: &[&str]| {
            let out = dyno_process().args(args).output().unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
        };
        quiet(&["cluster", "init", &f.path("c.toml")]);
        quiet(&["tune", "init", &f.path("study.toml")]);
        let tiny = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dyno-tune/tests/fixtures/tiny/Cargo.toml")
            .canonicalize()
            .unwrap();
        let study = std::fs::read_to_string(f.path("study.toml")).unwrap();
        let study: String = study
            .lines()
            .map(|l| match l {
                l if l.starts_with("manifest = ") => format!("manifest = {:?}\n", tiny),
                l if l.starts_with("bin = ") => "bin = \"tiny\"\n".to_string(),
                l => format!("{l}\n"),
            })
            .collect();
        write(&f.dir.path().join("study.toml"), &study);
        write(
            &f.dir.path().join("two-tile.toml"),
            &format!(
                "[workspace]\nname = \"stdout-{}\"\ndir = \"{}\"\n\n\
                 [layout]\naffinity = \"f2\"\n\n\
                 [[layout.tiles]]\nkind = \"source\"\ncount = 1\n\n\
                 [[layout.tiles]]\nkind = \"sink\"\ncount = 1\n\n\
                 [[links]]\nfrom = \"source\"\nto = \"sink\"\n",
                std::process::id(),
                f.dir.path().display()
            ),
        );
        f
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("r.db")
    }

    /// `dyno ARGS`, with the fixtures' store, run in their directory.
    fn dyno(&self, args: &[&str]) -> std::process::Command {
        let mut c = dyno_process();
        c.args(args)
            .env("DYNO_DB", self.db())
            .current_dir(self.dir.path());
        c
    }
}

/// Every command that prints to standard output, as a user types it, with the exit
/// code it has when its output is read to the end.
fn commands() -> Vec<(Vec<&'static str>, i32)> {
    let cases: &[(&[&str], i32)] = &[
        (&["--help"], 0),
        (&["--version"], 0),
        (&["completions", "bash"], 0),
        (&["man"], 0),
        (&["results", "list"], 0),
        (&["results", "list", "--format", "json"], 0),
        (&["results", "list", "--format", "csv"], 0),
        (&["results", "show", "1"], 0),
        (&["results", "show", "1", "--format", "json"], 0),
        (&["results", "export"], 0),
        (&["results", "export", "--format", "jsonl"], 0),
        (&["results", "trend", "--metric", "Blake2256"], 0),
        (
            &[
                "results",
                "trend",
                "--metric",
                "Blake2256",
                "--format",
                "json",
            ],
            0,
        ),
        (
            &[
                "results",
                "fleet",
                "--metric",
                "Blake2256",
                "--host",
                "bench-01",
            ],
            0,
        ),
        (&["compare", "report", "9"], 0),
        (&["compare", "report", "9", "--format", "json"], 0),
        (&["compare", "report", "9", "--format", "markdown"], 0),
        (&["compare", "power", "9"], 0),
        (&["cluster", "check", "c.toml"], 0),
        (&["cluster", "check", "c.toml", "--format", "json"], 0),
        (
            &[
                "cluster", "export", "c.toml", "--nomad", "--image", "dyno:1",
            ],
            0,
        ),
        (&["tune", "check", "study.toml"], 0),
        (&["tune", "report", "study.toml"], 2),
        (
            &[
                "machine",
                "--only",
                "Blake2256",
                "--hash-duration",
                "0.02",
                "--no-save",
            ],
            -1,
        ),
        (
            &[
                "machine",
                "--only",
                "Blake2256",
                "--hash-duration",
                "0.02",
                "--no-save",
                "--format",
                "json",
            ],
            -1,
        ),
        (
            &[
                "pipeline",
                "run",
                "--no-save",
                "--duration",
                "0.3",
                "--format",
                "json",
                "--config",
                "two-tile.toml",
            ],
            0,
        ),
        (&["results", "delete", "2"], 0),
    ];
    cases.iter().map(|(a, code)| (a.to_vec(), *code)).collect()
}

/// The exit code of `args` with standard output read to the end (for the machine
/// runs, whether this machine meets the requirements: -1 in the table).
fn expected(f: &Fixtures, args: &[&str], code: i32) -> i32 {
    if code >= 0 {
        return code;
    }
    f.dyno(args).output().unwrap().status.code().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_its_own_exit_code() {
    let f = Fixtures::new();
    for (args, code) in commands() {
        let want = expected(&f, &args, code);
        let out = with_stdout_closed(&mut f.dyno(&args));
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(want),
            "{args:?} with stdout closed: {:?}\n{err}",
            out.status
        );
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
        assert!(
            !err.contains("standard output"),
            "{args:?} complained:\n{err}"
        );
    }
}

#[test]
fn a_full_stdout_is_exit_3_with_one_line_naming_it() {
    let f = Fixtures::new();
    for (args, code) in commands() {
        let Some(out) = with_stdout_full(&mut f.dyno(&args)) else {
            return;
        };
        let err = stderr(&out);
        if code == 2 {
            // Refused before printing anything (a report of a study never run).
            assert_eq!(out.status.code(), Some(2), "{args:?}:\n{err}");
            continue;
        }
        assert_eq!(
            out.status.code(),
            Some(3),
            "{args:?} into /dev/full:\n{err}"
        );
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: ")
                && last.contains("standard output")
                && last.contains("No space left on device"),
            "{args:?}: the last line of stderr is {last:?}:\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
}

#[test]
fn closed_stdout_and_stderr_together_end_as_a_closed_stdout_does() {
    let f = Fixtures::new();
    for (args, code) in commands() {
        let want = expected(&f, &args, code);
        let status = with_output_closed(&mut f.dyno(&args));
        assert_eq!(
            status.code(),
            Some(want),
            "{args:?} with 2>&1 closed: {status:?}"
        );
    }
}

/// The single-process node prints its summary when its window ends; a node is heavy,
/// so this case has its own test.
#[test]
fn a_node_with_its_stdout_closed_or_full_finishes_its_window() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let node = |name: &str| {
        let mut c = dyno_process();
        c.args([
            "node",
            "--workload",
            "value",
            "--rate",
            "200",
            "--duration",
            "1",
        ])
        .args(["--no-save", "--no-ledger-check", "--name"])
        .arg(format!("{name}-{}", std::process::id()))
        .current_dir(dir.path());
        c
    };
    let out = with_stdout_closed(&mut node("closed"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Its progress lines go to stderr each second: closed too, the node still ends well.
    assert_eq!(with_output_closed(&mut node("both")).code(), Some(0));
    if let Some(out) = with_stdout_full(&mut node("full")) {
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains("standard output"), "{}", stderr(&out));
    }
    assert_nothing_left(dir.path());
}

fn assert_nothing_left(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
