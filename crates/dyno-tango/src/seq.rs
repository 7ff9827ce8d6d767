//! 64-bit sequence numbers compared with wrapping arithmetic.
//!
//! A link's sequence numbers are never reused in practice (2^64 frags), but a link may
//! start anywhere, including just below `u64::MAX`; every comparison therefore goes
//! through the signed difference, which is correct while the two numbers are less than
//! 2^63 apart.

/// `a - b` as a signed distance (positive when `a` is ahead of `b`).
#[inline(always)]
pub fn seq_diff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// `a` comes strictly before `b`.
#[inline(always)]
pub fn seq_lt(a: u64, b: u64) -> bool {
    seq_diff(a, b) < 0
}

/// `a` comes strictly after `b`.
#[inline(always)]
pub fn seq_gt(a: u64, b: u64) -> bool {
    seq_diff(a, b) > 0
}

/// The sequence number `n` frags after `a`.
#[inline(always)]
pub fn seq_inc(a: u64, n: u64) -> u64 {
    a.wrapping_add(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap_around_u64_max() {
        let a = u64::MAX - 1;
        let b = seq_inc(a, 3); // == 1
        assert_eq!(b, 1);
        assert!(seq_lt(a, b));
        assert!(seq_gt(b, a));
        assert_eq!(seq_diff(b, a), 3);
        assert_eq!(seq_diff(a, b), -3);
        assert!(!seq_lt(a, a));
    }
}
