//! The `dyno_build_info` family that every dyno endpoint serves first.

use crate::write::{Desc, TextWriter};

/// The `dyno_build_info` family: always 1, its labels chosen by the caller.
pub const BUILD_INFO: Desc = Desc::gauge(
    "dyno_build_info",
    "Always 1; the labels name the dyno build serving these metrics.",
);

/// The `dyno_build_info` gauge (always 1) whose labels say which build serves the
/// metrics, e.g. `[("version", "0.1.0"), ("profile", "release")]`, as Prometheus
/// exporters conventionally do, so a scrape can be joined with the build that made it.
pub fn build_info_text(labels: &[(&str, &str)]) -> String {
    let mut w = TextWriter::new();
    w.family(&BUILD_INFO).sample_labelled(labels, 1u8);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_info_is_a_gauge_of_one_with_the_build_in_its_labels() {
        let text = build_info_text(&[("version", "0.1.0"), ("profile", "release")]);
        assert_eq!(
            text,
            "# HELP dyno_build_info Always 1; the labels name the dyno build serving these metrics.\n\
             # TYPE dyno_build_info gauge\n\
             dyno_build_info{version=\"0.1.0\",profile=\"release\"} 1\n"
        );
    }
}
