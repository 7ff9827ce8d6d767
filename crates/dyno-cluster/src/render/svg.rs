//! The topology drawn as SVG: regions as clusters around a circle, nodes coloured by
//! region, producers as squares, cross-region links dashed.

use crate::file::{ClusterSpec, Role};
use dyno_report::escape_html as escape;
use std::f64::consts::TAU;
use std::fmt::Write;

/// Okabe-Ito colours, the palette dyno-report's plots use, so regions read the same.
const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
];

/// Where each node is drawn, by id, in an `size` x `size` square.
fn positions(spec: &ClusterSpec, size: f64) -> Vec<(f64, f64)> {
    let regions = spec.regions.len();
    let centre = size / 2.0;
    let (outer, inner) = if regions == 1 {
        (0.0, size * 0.38)
    } else {
        (size * 0.28, size * 0.17)
    };
    let mut index_in_region = vec![0usize; regions];
    let members: Vec<usize> = (0..regions)
        .map(|r| spec.nodes.iter().filter(|n| n.region == r).count())
        .collect();
    spec.nodes
        .iter()
        .map(|n| {
            let r = n.region;
            let a = TAU * r as f64 / regions as f64 - TAU / 4.0;
            let (cx, cy) = (centre + outer * a.cos(), centre + outer * a.sin());
            let i = index_in_region[r];
            index_in_region[r] += 1;
            let b = TAU * i as f64 / members[r].max(1) as f64 + a;
            (cx + inner * b.cos(), cy + inner * b.sin())
        })
        .collect()
}

/// The topology of `spec` as a standalone SVG document.
pub fn topology_svg(spec: &ClusterSpec) -> String {
    let size = 640.0;
    let legend = 24.0 * spec.regions.len() as f64 + 40.0;
    let pos = positions(spec, size);
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{h}" viewBox="0 0 {size} {h}" font-family="sans-serif" font-size="11">"#,
        h = size + legend
    );
    let _ = write!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (a, b) in spec.topology.edges() {
        let cross = spec.nodes[a].region != spec.nodes[b].region;
        let style = if cross {
            r##"stroke="#888" stroke-dasharray="4 3""##
        } else {
            r##"stroke="#444""##
        };
        let _ = write!(
            s,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" {style} stroke-width="1"><title>n{a} - n{b}</title></line>"#,
            pos[a].0, pos[a].1, pos[b].0, pos[b].1
        );
    }
    for n in &spec.nodes {
        let (x, y) = pos[n.id];
        let fill = PALETTE[n.region % PALETTE.len()];
        let title = format!(
            "{} ({}, {})",
            n.name,
            escape(&spec.regions[n.region].name),
            match n.role {
                Role::Producer { stake } => format!("producer, stake {stake}"),
                Role::Relay => "relay".to_string(),
            }
        );
        match n.role {
            Role::Producer { .. } => {
                let _ = write!(
                    s,
                    r#"<rect x="{:.1}" y="{:.1}" width="14" height="14" fill="{fill}" stroke="black"><title>{title}</title></rect>"#,
                    x - 7.0,
                    y - 7.0
                );
            }
            Role::Relay => {
                let _ = write!(
                    s,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="7" fill="{fill}" stroke="black"><title>{title}</title></circle>"#
                );
            }
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 9.0,
            y - 6.0,
            n.name
        );
    }
    for (r, region) in spec.regions.iter().enumerate() {
        let y = size + 20.0 + 24.0 * r as f64;
        let count = spec.nodes.iter().filter(|n| n.region == r).count();
        let _ = write!(
            s,
            r#"<circle cx="20" cy="{y}" r="7" fill="{}"/><text x="34" y="{:.0}">{} ({count} nodes)</text>"#,
            PALETTE[r % PALETTE.len()],
            y + 4.0,
            escape(&region.name)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.0}" y="{:.0}" text-anchor="end">squares: producers; dashed: cross-region links</text></svg>"#,
        size - 10.0,
        size + 24.0
    );
    s
}
