//! The series of one execution of a node's process: what the /proc sampler's samples
//! become. The execution itself, its series and its outcome are dyno-exec's data
//! (re-exported here); the values it is judged by are the judge's (`dyno_judge::values`).

use crate::sampler::ProcSample;

pub use crate::declared::guess_direction;
pub use dyno_exec::{process_metrics, Execution, Outcome, Series, SeriesKind};

/// Turns /proc samples into series; I/O series are left out when /proc/PID/io was
/// unreadable (absent, not zero). `t0` is the start of the measured window.
pub fn process_series(samples: &[ProcSample], t0: f64) -> Vec<Series> {
    let get = |s: &ProcSample, name: &str| -> Option<f64> {
        Some(match name {
            "cpu_percent" => s.cpu_percent,
            "rss_bytes" => s.rss_bytes,
            "peak_rss_bytes" => s.peak_rss_bytes,
            "minor_faults_per_s" => s.minor_faults_per_s,
            "major_faults_per_s" => s.major_faults_per_s,
            "voluntary_switches_per_s" => s.voluntary_switches_per_s,
            "involuntary_switches_per_s" => s.involuntary_switches_per_s,
            "read_bytes_per_s" => s.read_bytes_per_s?,
            "write_bytes_per_s" => s.write_bytes_per_s?,
            _ => return None,
        })
    };
    process_metrics()
        .into_iter()
        .filter_map(|(metric, kind)| {
            let points: Option<Vec<(f64, f64)>> = samples
                .iter()
                .map(|s| get(s, &metric.name).map(|v| (s.t - t0, v)))
                .collect();
            let points = points.filter(|p| !p.is_empty())?;
            Some(Series {
                metric,
                kind,
                points,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_io_leaves_no_series() {
        let s = ProcSample {
            t: 11.0,
            cpu_percent: 50.0,
            ..ProcSample::default()
        };
        let series = process_series(&[s, s], 10.0);
        assert!(series.iter().all(|s| s.metric.name != "read_bytes_per_s"));
        assert_eq!(series[0].points, vec![(1.0, 50.0), (1.0, 50.0)]);
        let with_io = ProcSample {
            read_bytes_per_s: Some(1.0),
            write_bytes_per_s: Some(0.0),
            ..s
        };
        assert_eq!(process_series(&[with_io], 10.0).len(), 9);
    }
}
