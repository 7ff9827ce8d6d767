//! Student's t distribution (tail probability and quantile), for the paired t-test on
//! per-round log ratios ([`crate::paired_t`]).
//!
//! The tail is the regularized incomplete beta function `I_x(df/2, 1/2)`, evaluated by
//! its continued fraction (Lentz's method); the quantile inverts it by bisection, which
//! is plenty for the handful of intervals a report needs.

/// `P(T > t)` for Student's t with `df` degrees of freedom (`df > 0`).
pub fn student_t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(0.5 * df, 0.5, x);
    if t >= 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// The `p`-quantile of Student's t with `df` degrees of freedom, `0 < p < 1`.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while student_t_sf(hi, df) > 1.0 - p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_sf(mid, df) > 1.0 - p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Regularized incomplete beta `I_x(a, b)`.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the
    // symmetry I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + even * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + even / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + odd * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + odd / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Gamma(x)` for `x > 0` (Lanczos, g = 7, 9 terms: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided critical values of printed t tables: (df, level, t).
    const TABLE: [(f64, f64, f64); 7] = [
        (1.0, 0.05, 12.706),
        (4.0, 0.05, 2.776),
        (9.0, 0.05, 2.262),
        (9.0, 0.01, 3.250),
        (9.0, 0.001, 4.781),
        (19.0, 0.05, 2.093),
        (30.0, 0.01, 2.750),
    ];

    #[test]
    fn tails_match_the_tables() {
        for (df, level, t) in TABLE {
            let p = 2.0 * student_t_sf(t, df);
            assert!((p - level).abs() < level * 0.01, "df {df} t {t}: p {p}");
            let q = student_t_quantile(1.0 - level / 2.0, df);
            assert!((q - t).abs() < 0.0015, "df {df} level {level}: q {q}");
        }
    }

    #[test]
    fn symmetry_and_limits() {
        assert!((student_t_sf(0.0, 5.0) - 0.5).abs() < 1e-14);
        assert!((student_t_sf(-1.3, 7.0) + student_t_sf(1.3, 7.0) - 1.0).abs() < 1e-14);
        assert_eq!(student_t_sf(f64::INFINITY, 3.0), 0.0);
        // df = 1 is Cauchy: P(T > 1) = 1/4.
        assert!((student_t_sf(1.0, 1.0) - 0.25).abs() < 1e-12);
        // Large df approaches the normal: P(Z > 1.96) = 0.0249979.
        assert!((student_t_sf(1.96, 1e6) - 0.024_997_9).abs() < 1e-6);
        assert!(student_t_sf(1.0, 0.0).is_nan());
        assert!(student_t_quantile(1.5, 3.0).is_nan());
    }
}
