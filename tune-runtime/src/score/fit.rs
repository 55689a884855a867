//! The two curve fits the methodology uses: isotonic regression (scikit-learn's
//! `IsotonicRegression`: ties in `x` averaged, pool-adjacent-violators, linear interpolation
//! between the fitted points, clipped outside) and the monotone cubic PCHIP interpolant
//! (SciPy's `PchipInterpolator`, Fritsch–Carlson slopes with its end-point rule).

/// A non-increasing fit of `y` over `x`, clipped to `[y_min, y_max]`, evaluated at `at`.
/// `x` and `y` have the same length (at least one point).
pub(crate) fn isotonic_decreasing(
    x: &[f64],
    y: &[f64],
    y_min: f64,
    y_max: f64,
    at: &[f64],
) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(y[a].total_cmp(&y[b])));
    // Equal x: one point with the mean y and the summed weight.
    let mut ux: Vec<f64> = Vec::new();
    let mut uy: Vec<f64> = Vec::new();
    let mut uw: Vec<f64> = Vec::new();
    for &i in &order {
        match ux.last() {
            Some(&last) if x[i] - last < f64::EPSILON.max(1e-15) => {
                let k = uy.len() - 1;
                uy[k] = (uy[k] * uw[k] + y[i]) / (uw[k] + 1.0);
                uw[k] += 1.0;
            }
            _ => {
                ux.push(x[i]);
                uy.push(y[i]);
                uw.push(1.0);
            }
        }
    }
    // Pool adjacent violators on the reversed sequence, which must be non-decreasing.
    let n = uy.len();
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(n); // (mean, weight, count)
    for k in (0..n).rev() {
        blocks.push((uy[k], uw[k], 1));
        while blocks.len() > 1 {
            let (m2, w2, c2) = blocks[blocks.len() - 1];
            let (m1, w1, c1) = blocks[blocks.len() - 2];
            if m1 <= m2 {
                break;
            }
            blocks.pop();
            let w = w1 + w2;
            let last = blocks.len() - 1;
            blocks[last] = ((m1 * w1 + m2 * w2) / w, w, c1 + c2);
        }
    }
    let mut fitted: Vec<f64> = Vec::with_capacity(n);
    for &(m, _, c) in &blocks {
        fitted.extend(std::iter::repeat_n(m.clamp(y_min, y_max), c));
    }
    fitted.reverse();
    at.iter().map(|&t| interpolate(&ux, &fitted, t)).collect()
}

/// Linear interpolation through `(xs, ys)` (sorted `xs`), constant beyond the ends.
fn interpolate(xs: &[f64], ys: &[f64], t: f64) -> f64 {
    let n = xs.len();
    if n == 1 || t <= xs[0] {
        return ys[0];
    }
    if t >= xs[n - 1] {
        return ys[n - 1];
    }
    let k = xs.partition_point(|&x| x <= t); // xs[k-1] <= t < xs[k]
    let (x0, x1, y0, y1) = (xs[k - 1], xs[k], ys[k - 1], ys[k]);
    y0 + (y1 - y0) * (t - x0) / (x1 - x0)
}

/// The PCHIP interpolant through `(x, y)` (strictly increasing `x`, at least two points),
/// evaluated at `at` (extrapolating the end pieces, as SciPy does by default).
pub(crate) fn pchip(x: &[f64], y: &[f64], at: &[f64]) -> Vec<f64> {
    let n = x.len();
    let h: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let m: Vec<f64> = (0..n - 1).map(|k| (y[k + 1] - y[k]) / h[k]).collect();
    let mut d = vec![0.0; n];
    if n == 2 {
        d = vec![m[0], m[0]];
    } else {
        for k in 1..n - 1 {
            let (m0, m1) = (m[k - 1], m[k]);
            if m0 == 0.0 || m1 == 0.0 || m0.signum() != m1.signum() {
                d[k] = 0.0;
            } else {
                let w1 = 2.0 * h[k] + h[k - 1];
                let w2 = h[k] + 2.0 * h[k - 1];
                d[k] = (w1 + w2) / (w1 / m0 + w2 / m1);
            }
        }
        d[0] = edge(h[0], h[1], m[0], m[1]);
        d[n - 1] = edge(h[n - 2], h[n - 3], m[n - 2], m[n - 3]);
    }
    at.iter()
        .map(|&t| {
            let k = x.partition_point(|&v| v <= t).clamp(1, n - 1) - 1;
            let hk = h[k];
            let s = (t - x[k]) / hk;
            let (s2, s3) = (s * s, s * s * s);
            let h00 = 2.0 * s3 - 3.0 * s2 + 1.0;
            let h10 = s3 - 2.0 * s2 + s;
            let h01 = -2.0 * s3 + 3.0 * s2;
            let h11 = s3 - s2;
            h00 * y[k] + h10 * hk * d[k] + h01 * y[k + 1] + h11 * hk * d[k + 1]
        })
        .collect()
}

/// SciPy's one-sided three-point slope at an end, kept shape-preserving.
fn edge(h0: f64, h1: f64, m0: f64, m1: f64) -> f64 {
    let d = ((2.0 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
    if d.signum() != m0.signum() || d == 0.0 || m0 == 0.0 {
        0.0
    } else if m0.signum() != m1.signum() && d.abs() > 3.0 * m0.abs() {
        3.0 * m0
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isotonic_pools_violators_and_averages_ties() {
        // Decreasing fit of 5, 7, 3, 3 at x = 0, 1, 2, 2: the first two pool to 6, the tie
        // at x = 2 averages to 3.
        let f = isotonic_decreasing(
            &[0.0, 1.0, 2.0, 2.0],
            &[5.0, 7.0, 3.0, 3.0],
            0.0,
            10.0,
            &[-1.0, 0.5, 1.5, 9.0],
        );
        assert_eq!(f, vec![6.0, 6.0, 4.5, 3.0]);
    }

    #[test]
    fn pchip_interpolates_and_stays_monotone() {
        let x = [1.0, 2.0, 4.0, 8.0];
        let y = [10.0, 6.0, 5.0, 1.0];
        let at: Vec<f64> = (0..=70).map(|i| 1.0 + i as f64 * 0.1).collect();
        let v = pchip(&x, &y, &at);
        for w in v.windows(2) {
            assert!(w[1] <= w[0] + 1e-12, "{w:?}");
        }
        let knots = pchip(&x, &y, &x);
        for (a, b) in knots.iter().zip(y) {
            assert!((a - b).abs() < 1e-12);
        }
        // Two points: a straight line.
        assert_eq!(pchip(&[0.0, 2.0], &[0.0, 4.0], &[1.0]), vec![2.0]);
    }
}
