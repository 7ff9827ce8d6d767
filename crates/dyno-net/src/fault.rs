//! Faults on a link, changed while the network runs: extra latency, jitter, loss, a lower
//! bandwidth, or the link cut altogether (a partition).
//!
//! A fault is applied by the SENDER, as the shaping is ([`crate::shape`]): a frame the
//! fault loses is never written, so the far side sees nothing, as behind a `netem loss`
//! qdisc; a cut link stays connected (TCP keeps its session) but carries nothing, as a
//! partition by packet filter does. Cutting both directions takes both ends' faults: a
//! partition is set on every node on each side of it.

use std::time::Duration;

use crate::shape::LinkShape;

/// What is wrong with one direction of a link (from this node to one peer).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LinkFault {
    /// Added to the link's own latency.
    pub extra_latency: Duration,
    /// Each frame's latency varies by a uniform draw in `-jitter ..= +jitter` (never
    /// below zero; frames are still delivered in order, as on one TCP connection).
    pub jitter: Duration,
    /// Fraction of frames lost, 0 to 1.
    pub loss: f64,
    /// A bandwidth in bits per second that replaces the link's when it is lower.
    pub bandwidth_bps: Option<u64>,
    /// Nothing passes (a partition).
    pub blocked: bool,
}

impl LinkFault {
    /// True when the fault changes nothing.
    pub fn is_none(&self) -> bool {
        *self == LinkFault::default()
    }

    /// The shape of one frame on a link shaped `base` under this fault; `draw` is a
    /// uniform number in `[0, 1)` for the jitter.
    pub fn shape(&self, base: LinkShape, draw: f64) -> LinkShape {
        let jitter_ns = self.jitter.as_nanos() as f64 * (2.0 * draw - 1.0);
        let latency_ns = (base.latency + self.extra_latency).as_nanos() as f64 + jitter_ns.round();
        let bandwidth_bps = match (base.bandwidth_bps, self.bandwidth_bps) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        LinkShape {
            latency: Duration::from_nanos(latency_ns.max(0.0) as u64),
            bandwidth_bps,
        }
    }

    /// Whether a frame is dropped, given a uniform draw in `[0, 1)`.
    pub fn drops(&self, draw: f64) -> bool {
        self.blocked || draw < self.loss
    }
}

/// A small xorshift generator: loss and jitter draws need no cryptographic quality, and a
/// seed makes a test's draws the same every run.
#[derive(Clone, Debug)]
pub struct Draws(u64);

impl Draws {
    /// A generator from `seed` (0 is replaced: xorshift would stay at 0).
    pub fn new(seed: u64) -> Draws {
        Draws(seed.max(1))
    }

    /// The next uniform number in `[0, 1)`.
    pub fn next_unit(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_adds_to_the_links_own_shape() {
        let base = LinkShape {
            latency: Duration::from_millis(20),
            bandwidth_bps: Some(100_000_000),
        };
        let f = LinkFault {
            extra_latency: Duration::from_millis(100),
            jitter: Duration::from_millis(10),
            bandwidth_bps: Some(1_000_000),
            ..LinkFault::default()
        };
        assert_eq!(f.shape(base, 0.5).latency, Duration::from_millis(120));
        assert_eq!(f.shape(base, 0.0).latency, Duration::from_millis(110));
        assert_eq!(f.shape(base, 1.0).latency, Duration::from_millis(130));
        assert_eq!(f.shape(base, 0.5).bandwidth_bps, Some(1_000_000));
        // A fault's bandwidth above the link's own does not speed it up.
        let wide = LinkFault {
            bandwidth_bps: Some(u64::MAX),
            ..LinkFault::default()
        };
        assert_eq!(wide.shape(base, 0.5).bandwidth_bps, Some(100_000_000));
        // Jitter never makes a latency negative.
        let j = LinkFault {
            jitter: Duration::from_millis(50),
            ..LinkFault::default()
        };
        assert_eq!(j.shape(base, 0.0).latency, Duration::ZERO);
        assert!(LinkFault::default().is_none() && !f.is_none());
    }

    #[test]
    fn loss_drops_about_its_fraction_and_a_cut_drops_everything() {
        let f = LinkFault {
            loss: 0.3,
            ..LinkFault::default()
        };
        let mut d = Draws::new(7);
        let dropped = (0..10_000).filter(|_| f.drops(d.next_unit())).count();
        assert!((2_700..3_300).contains(&dropped), "{dropped}");
        let cut = LinkFault {
            blocked: true,
            ..LinkFault::default()
        };
        assert!(cut.drops(0.99));
        assert!(!LinkFault::default().drops(0.0));
    }
}
