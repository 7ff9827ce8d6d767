//! Every comparison file under examples/ reads as a comparison: a rule that tightens what
//! a file may say (placeholders, bounds, names) must not leave the examples a newcomer
//! runs first refused.

use dyno_compare::ComparisonFile;
use std::path::{Path, PathBuf};

/// The `.toml` files under `dir` (recursively) that hold a `[[subject]]` table.
fn comparison_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            comparison_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml")
            && std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .any(|l| l.trim() == "[[subject]]")
        {
            out.push(path);
        }
    }
}

/// The path a "`PATH` does not exist" error names, if that is the error.
fn missing_path(error: &str) -> Option<&str> {
    let head = &error[..error.find("` does not exist")?];
    Some(&head[head.rfind('`')? + 1..])
}

#[test]
fn every_example_comparison_file_reads() {
    // The examples' commands and `cwd`s are relative to the repository root, where dyno
    // runs them (the only test of this binary, so the change of directory is its own).
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::set_current_dir(&repo).unwrap();
    let mut files = Vec::new();
    comparison_files(Path::new("examples"), &mut files);
    assert!(files.len() >= 8, "{files:?}");
    let refused: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            ComparisonFile::parse(&text, path)
                .err()
                .map(|e| e.to_string())
                // dyno's own builds (target/..., ../../target/... from a file's folder)
                // are what the reference-node examples run; a fresh clone (and CI's
                // debug build) has none yet.
                .filter(|e| missing_path(e).is_none_or(|p| !p.split('/').any(|c| c == "target")))
        })
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
}
