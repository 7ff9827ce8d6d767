//! The maps of the code stay true to it: docs/architecture.md's floors and README.md's
//! layout block name every crate under crates/, and no crate that is gone.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The crates of the workspace, as the directory shows them.
fn crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The `dyno`/`dyno-*` words of `text`'s first fenced block after `heading`.
fn named_in_block(text: &str, heading: &str) -> BTreeSet<String> {
    let after = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"))..];
    let block = after.split("```").nth(1).expect("a fenced block");
    block
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| *w == "dyno" || w.starts_with("dyno-"))
        .map(|w| w.trim_end_matches('-').to_string())
        .collect()
}

#[test]
fn the_architecture_map_and_the_readme_layout_name_exactly_the_crates_there_are() {
    let there = crates();
    assert!(there.contains("dyno-judge"), "{there:?}");
    let architecture = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for (doc, named) in [
        (
            "docs/architecture.md",
            named_in_block(&architecture, "## The crates on their floors"),
        ),
        ("README.md", named_in_block(&readme, "## Layout")),
    ] {
        let missing: Vec<_> = there.difference(&named).collect();
        let gone: Vec<_> = named.difference(&there).collect();
        assert!(missing.is_empty(), "{doc} does not name {missing:?}");
        assert!(
            gone.is_empty(),
            "{doc} names crates that are not there: {gone:?}"
        );
    }
    assert!(
        readme.contains("(docs/architecture.md)"),
        "README's layout points to the map"
    );
}
