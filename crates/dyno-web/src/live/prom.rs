//! Reading the Prometheus text exposition (0.0.4) that dyno's endpoints write, with
//! dyno-obs' reader (the one `dyno compare` reads nodes with; its tests live there).

pub(crate) use dyno_obs::read::Sample as PromSample;

/// Parses an exposition; `Err` names the first line that is not a sample or a comment.
pub(crate) fn parse_exposition(text: &str) -> Result<Vec<PromSample>, String> {
    dyno_obs::read::parse_exposition(text).map_err(|e| e.to_string())
}
