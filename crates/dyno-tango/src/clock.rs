//! A cheap tick clock for the run loop's time accounting.
//!
//! On x86_64 a tick is one TSC increment (`rdtsc`, ~20 cycles, no syscall); elsewhere and
//! under Miri it is a nanosecond since a process-wide epoch (`Instant`). Ticks are
//! converted to nanoseconds with a factor measured once per process ([`ns_per_tick`]):
//! accounting adds ticks, and only the housekeeping converts totals to ns.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The current tick count.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: rdtsc is available on every x86_64 CPU and has no preconditions.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        epoch().elapsed().as_nanos() as u64
    }
}

/// Nanoseconds per tick, calibrated once against `Instant` over about 5 ms.
pub fn ns_per_tick() -> f64 {
    static FACTOR: OnceLock<f64> = OnceLock::new();
    *FACTOR.get_or_init(|| {
        if cfg!(any(miri, not(target_arch = "x86_64"))) {
            return 1.0;
        }
        let _ = epoch();
        let (t0, i0) = (ticks(), Instant::now());
        while i0.elapsed() < Duration::from_millis(5) {
            std::hint::spin_loop();
        }
        let (t1, ns) = (ticks(), i0.elapsed().as_nanos() as f64);
        let dt = t1.wrapping_sub(t0) as f64;
        if dt > 0.0 {
            ns / dt
        } else {
            1.0
        }
    })
}

/// Converts a tick count to nanoseconds.
pub fn ticks_to_ns(t: u64) -> u64 {
    (t as f64 * ns_per_tick()) as u64
}

/// Wall-clock nanoseconds since the Unix epoch (heartbeats, workspace start time).
/// Under Miri (whose isolation hides the wall clock) it is ns since the process epoch.
pub fn wallclock_ns() -> u64 {
    if cfg!(miri) {
        return epoch().elapsed().as_nanos() as u64;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_monotonic_and_convert() {
        let a = ticks();
        let b = ticks();
        assert!(b >= a);
        let f = ns_per_tick();
        assert!(f.is_finite() && f > 0.0);
        assert_eq!(ticks_to_ns(0), 0);
    }
}
