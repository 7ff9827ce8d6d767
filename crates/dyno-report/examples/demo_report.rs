//! Builds a report with every table and plot kind from synthetic data and writes it to
//! the path given as the only argument (for looking at the output in a browser).
//!
//! ```text
//! cargo run -p dyno-report --example demo_report -- /tmp/report.html
//! ```

use dyno_model::{format_value, Direction, Metric, Unit};
use dyno_report::plot::{BoxPlot, CdfPlot, Interval, ScatterPlot, ScatterPoint, TimeSeriesPlot};
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table, Verdict};

/// A small deterministic generator (xorshift), so the demo needs no random crate and
/// draws the same report every time.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal: the sum of four uniforms, centred and scaled.
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let s: f64 = (0..4).map(|_| self.next()).sum();
        mean + sd * (s - 2.0) * 1.73
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .ok_or("usage: demo_report <output.html>")?;
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let gib = 1024.0 * 1024.0 * 1024.0;

    let throughput = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
    let variants = [
        ("official", 1.02),
        ("lto-fat", 1.21),
        ("lto-thin", 1.15),
        ("codegen-units=1", 1.09),
        ("opt-level=2 <check escaping>", 0.97),
    ];
    let samples: Vec<(&str, Vec<f64>)> = variants
        .iter()
        .map(|&(name, m)| {
            let v = (0..12).map(|_| noise.normal(m * gib, 0.02 * gib)).collect();
            (name, v)
        })
        .collect();

    let mut table = Table::new("Blake2-256 throughput by build variant")
        .column("variant", Align::Left)
        .column("median", Align::Right)
        .column("vs official", Align::Right)
        .column("verdict", Align::Center);
    let official = dyno_stats::median(&samples[0].1).unwrap_or(f64::NAN);
    let mut box_plot = BoxPlot::new("Blake2-256 throughput", throughput.clone())
        .baseline("official median", official);
    for (name, values) in &samples {
        let m = dyno_stats::median(values).unwrap_or(f64::NAN);
        let change = (m / official - 1.0) * 100.0;
        let (verdict, status) = match change {
            c if c > 2.0 => ("faster", Cell::good as fn(Cell) -> Cell),
            c if c < -2.0 => ("slower", Cell::bad as fn(Cell) -> Cell),
            _ => ("same", Cell::emphasis as fn(Cell) -> Cell),
        };
        table.push_row([
            Cell::new(*name),
            Cell::new(format_value(m, Unit::BytesPerSecond)),
            status(Cell::new(format!("{change:+.1} %"))),
            status(Cell::new(verdict)),
        ]);
        box_plot = box_plot.subject(*name, values.clone());
    }

    let size = Metric::new("binary size", Unit::Bytes, Direction::LowerIsBetter);
    let tps = Metric::new("import rate", Unit::PerSecond, Direction::HigherIsBetter);
    let scatter = ScatterPlot::new("Binary size vs block import rate", size, tps)
        .point(ScatterPoint::new(
            "official",
            Interval::point(92e6),
            Interval::new(3900.0, 4000.0, 4080.0),
        ))
        .point(
            ScatterPoint::new(
                "lto-fat",
                Interval::point(78e6),
                Interval::new(4500.0, 4620.0, 4700.0),
            )
            .pareto(true),
        )
        .point(
            ScatterPoint::new(
                "opt-level=s",
                Interval::point(61e6),
                Interval::new(3500.0, 3600.0, 3720.0),
            )
            .pareto(true),
        )
        .point(ScatterPoint::new(
            "lto-thin",
            Interval::new(80e6, 81e6, 82e6),
            Interval::new(4300.0, 4400.0, 4520.0),
        ));

    let latency = Metric::new("submit latency", Unit::Seconds, Direction::LowerIsBetter);
    let lat = |noise: &mut Noise, base: f64| -> Vec<f64> {
        (0..400)
            .map(|_| base * (1.0 + 3.0 * noise.next().powi(4)) + noise.normal(0.0, base * 0.05))
            .map(|v: f64| v.max(base * 0.5))
            .collect()
    };
    let cdf = CdfPlot::new("Transaction submit latency", latency)
        .series("v1.2.0", lat(&mut noise, 0.012))
        .series("v1.3.0", lat(&mut noise, 0.010));

    let cpu = Metric::new("CPU", Unit::Percent, Direction::LowerIsBetter);
    let trace = |noise: &mut Noise, level: f64| -> Vec<(f64, f64)> {
        (0..120)
            .map(|s| {
                let ramp = (f64::from(s) / 10.0).min(1.0);
                (
                    f64::from(s),
                    (level * ramp + noise.normal(0.0, 4.0)).clamp(0.0, 100.0),
                )
            })
            .collect()
    };
    let cpu_plot = TimeSeriesPlot::new("Node CPU use during the run", cpu)
        .series("v1.2.0", trace(&mut noise, 62.0))
        .series("v1.3.0", trace(&mut noise, 55.0));
    let rss = Metric::new("RSS", Unit::Bytes, Direction::LowerIsBetter);
    let rss_plot = TimeSeriesPlot::new("Node memory (RSS)", rss)
        .series(
            "v1.2.0",
            (0..120)
                .map(|s| (f64::from(s), 1.5e9 + f64::from(s) * 4e6))
                .collect(),
        )
        .series(
            "v1.3.0",
            (0..120)
                .map(|s| (f64::from(s), 1.4e9 + f64::from(s) * 2e6))
                .collect(),
        );

    let report = HtmlReport::new("dyno demo report")
        .parameter("command", "dyno tune --study demo.toml")
        .parameter("repetitions", "12 per variant, interleaved")
        .parameter("tool", "dyno 0.1.0 (release)")
        .host_field("CPU", "Synthetic CPU @ 3.0 GHz")
        .host_field("cores online", "2")
        .host_field("memory", format_value(24.0 * gib, Unit::Bytes))
        .section(
            Section::new("Build variants")
                .paragraph(
                    "lto-fat is the fastest variant; its whole box lies above the official median.",
                )
                .verdict(Verdict::Improvement, "lto-fat: +18 % over official")
                .verdict(Verdict::Regression, "opt-level=2: -5 % against official")
                .verdict(Verdict::NoChange, "codegen-units=1: within noise")
                .table(table)
                .plot_result(
                    "Throughput per variant, best first; dots are single runs.",
                    box_plot.render_svg(),
                )
                .plot_result("Pareto-optimal variants in orange.", scatter.render_svg()),
        )
        .section(
            Section::new("Release comparison")
                .verdict(Verdict::Pass, "all requirements met")
                .verdict(Verdict::Fail, "disk write below the 950 MiB/s requirement")
                .plot_result("Latency distributions.", cdf.render_svg())
                .plot_result("CPU use over time.", cpu_plot.render_svg())
                .plot_result("Resident memory over time.", rss_plot.render_svg()),
        )
        .footer("Generated by dyno-report's demo example from synthetic data.");
    write_atomic(std::path::Path::new(&path), report.render().as_bytes())?;
    Ok(())
}
