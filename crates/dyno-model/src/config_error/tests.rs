use super::*;
use proptest::prelude::*;

const STUDY: &str = "\
# a study
[project]
manifest = \"Cargo.toml\"   # the manifest
bin = \"node\"

[[subject]]
name = \"a\"
command = [
  \"x=1\",
  \"--flag\",
]

[[subject]]
name = \"b\"
ready = { url = \"http://127.0.0.1:1/\", timeout_s = 0 }

[subject.metrics]
prometheus = \"bad\"
";

fn rendered(d: &ConfigDiagnostic) -> String {
    d.to_string()
}

#[test]
fn renders_file_line_column_key_and_snippet_lines() {
    let text = "rounds = 0\nalpha = 1.5\n";
    let d = ConfigDiagnostic::new(
        Path::new("c.toml"),
        text,
        Some(19..22),
        Some("alpha"),
        "1.5 is not in (0, 1)",
    );
    assert_eq!(
        rendered(&d),
        "c.toml:2:9: key `alpha`: 1.5 is not in (0, 1)\n  |\n2 | alpha = 1.5\n  |         ^^^"
    );
    assert_eq!(d.line(), Some(2));
}

#[test]
fn without_a_place_it_says_file_key_and_message_only() {
    let d = ConfigDiagnostic::at_key(Path::new("c.toml"), "a = 1\n", "workload", "none given");
    assert_eq!(rendered(&d), "c.toml: key `workload`: none given");
    assert!(d.snippet.is_empty());
}

#[test]
fn keys_are_found_in_tables_array_tables_and_inline_tables() {
    let at = |key: &str| {
        let span = locate_key(STUDY, key).unwrap_or_else(|| panic!("{key} not found"));
        (line_col(STUDY, span.start), &STUDY[span])
    };
    assert_eq!(
        at("project.manifest"),
        ((3, 1), "manifest = \"Cargo.toml\"")
    );
    assert_eq!(at("project.bin"), ((4, 1), "bin = \"node\""));
    assert_eq!(at("subject[0].command").0, (8, 1));
    // Lines inside a multi-line array are not entries, even with an `=` in a string.
    assert_eq!(at("subject[1].name").0, (14, 1));
    assert_eq!(at("subject[1].ready.timeout_s"), ((15, 40), "timeout_s"));
    assert_eq!(at("subject[1].metrics.prometheus").0, (18, 1));
    // A key that is not written points at the closest ancestor that is.
    assert_eq!(at("subject[0].cwd"), ((6, 1), "[[subject]]"));
    assert_eq!(at("subject[1]"), ((13, 1), "[[subject]]"));
    assert_eq!(at("subject"), ((6, 1), "[[subject]]"));
    assert_eq!(locate_key(STUDY, "workload"), None);
    assert_eq!(locate_key(STUDY, "x"), None);
}

#[test]
fn a_table_span_is_narrowed_to_the_key_inside_it() {
    let table = STUDY.find("[[subject]]\nname = \"b\"").unwrap();
    let d = ConfigDiagnostic::new(
        Path::new("s.toml"),
        STUDY,
        Some(table..STUDY.len()),
        Some("subject[1].ready.timeout_s"),
        "must be positive",
    );
    assert_eq!(d.position, Some((15, 40)));
    assert_eq!(d.snippet[2], format!("   | {}^^^^^^^^^", " ".repeat(39)));
}

#[test]
fn a_value_span_is_kept_over_the_key_line() {
    let text = "rounds = 0\n";
    let d = ConfigDiagnostic::new(Path::new("c"), text, Some(9..10), Some("rounds"), "m");
    assert_eq!(d.position, Some((1, 10)));
}

#[test]
fn parse_errors_take_the_key_from_the_text_at_the_span() {
    let text = "[run]\nalpha = \"x\"\n";
    let d = ConfigDiagnostic::parse_error(
        Path::new("s.toml"),
        text,
        "invalid type: string \"x\", expected f64\n",
        Some(14..17),
    );
    assert_eq!(
        rendered(&d),
        "s.toml:2:9: key `run.alpha`: invalid type: string \"x\", expected f64\n  |\n2 | alpha = \"x\"\n  |         ^^^"
    );
    let d = ConfigDiagnostic::parse_error(Path::new("s.toml"), text, "eof", None);
    assert_eq!(rendered(&d), "s.toml: eof");
}

#[test]
fn end_of_file_and_multibyte_offsets_stay_in_the_text() {
    let text = "a = \"é\"\nb = [";
    assert_eq!(line_col(text, text.len()), (2, 6));
    assert_eq!(line_col(text, 6), (1, 6)); // inside `é`: its start
    let d = ConfigDiagnostic::new(
        Path::new("f"),
        text,
        Some(text.len()..text.len()),
        None,
        "m",
    );
    assert_eq!(d.snippet, vec!["  |", "2 | b = [", "  |      ^"]);
    let crlf = "a = 1\r\nb = 2\r\n";
    let d = ConfigDiagnostic::new(Path::new("f"), crlf, Some(7..12), Some("b"), "m");
    assert_eq!(d.snippet[1], "2 | b = 2");
}

proptest! {
    #[test]
    fn line_and_column_always_point_inside_the_text(
        text in "(\\PC|\n|\r){0,80}",
        start in 0usize..120,
        len in 0usize..40,
    ) {
        let d = ConfigDiagnostic::new(Path::new("p"), &text, Some(start..start + len), None, "m");
        let (line, column) = d.position.unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        prop_assert!(line >= 1 && line <= lines.len());
        let content = lines[line - 1].trim_end_matches('\r');
        prop_assert!(column >= 1 && column <= lines[line - 1].chars().count() + 1);
        prop_assert_eq!(d.snippet.len(), 3);
        let printable: String = content
            .chars()
            .map(|c| if is_unprintable(c) { '\u{FFFD}' } else { c })
            .collect();
        let shown = format!("{line} | {printable}");
        prop_assert_eq!(&d.snippet[1], &shown);
        let carets = d.snippet[2].matches('^').count();
        prop_assert!(carets >= 1);
        prop_assert!(column - 1 + carets <= content.chars().count().max(column - 1) + 1);
    }

    #[test]
    fn every_located_key_is_written_in_the_text(text in "([a-z]{1,3} = [0-9]\n|\\[[a-z]{1,2}\\]\n|\\[\\[[a-z]\\]\\]\n){0,12}", key in "[a-z]{1,3}") {
        if let Some(span) = locate_key(&text, &key) {
            prop_assert!(span.end <= text.len() && span.start <= span.end);
            prop_assert!(!text[span].trim().is_empty());
        }
    }
}

#[test]
fn an_entry_in_a_sub_table_beats_its_array_tables_header_span() {
    let text = "[[workload]]\nname = \"w\"\n[workload.load]\ncommand = [\"x\"]\n";
    let key = Some("workload[0].load.command");
    let d = ConfigDiagnostic::new(Path::new("c"), text, Some(0..12), key, "m");
    assert_eq!(d.position, Some((4, 1)));
    // Not written at all: the header's own span stays.
    let key = Some("workload[0].load.cwd");
    let d = ConfigDiagnostic::new(Path::new("c"), text, Some(0..12), key, "m");
    assert_eq!(d.position, Some((1, 1)));
}

#[test]
fn a_table_the_top_level_lacks_is_named_without_a_line() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct File {
        a: u32,
        links: std::collections::BTreeMap<String, u32>,
    }
    let text = "# a comment\na = 1\n";
    let d = ConfigDiagnostic::parse_toml::<File>(Path::new("c.toml"), text).unwrap_err();
    assert_eq!(d.position, None, "{d}");
    assert!(d.to_string().starts_with("c.toml: no `links`"), "{d}");
}

#[test]
fn a_long_or_unprintable_line_is_shown_by_its_head_with_no_control_characters() {
    let text = format!("name = \"a\u{202E}b{}\"\n", "x".repeat(100_000));
    let d = ConfigDiagnostic::new(Path::new("c.toml"), &text, None, Some("name"), "too long");
    let shown = rendered(&d);
    assert!(shown.len() < 1000, "{} bytes", shown.len());
    assert!(
        !d.snippet.iter().any(|l| l.chars().any(is_unprintable)),
        "{shown:?}"
    );
    assert!(shown.contains("name = \"a\u{FFFD}bxxx"), "{shown}");
    assert!(shown.contains("xxx...\n"), "{shown}");
}
