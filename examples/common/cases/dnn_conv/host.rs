//! The references on the host (f64 accumulation) and the filters of backward-data.

use super::Layer;

/// `w'[c][k][R-1-r][S-1-s]`.
pub fn flip_filters(l: &Layer, w: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    for k in 0..l.ko {
        for c in 0..l.c {
            for r in 0..l.r {
                for s in 0..l.s {
                    let (fr, fs) = (l.r - 1 - r, l.s - 1 - s);
                    out[((c * l.ko + k) * l.r + fr) * l.s + fs] =
                        w[((k * l.c + c) * l.r + r) * l.s + s];
                }
            }
        }
    }
    out
}

/// Visits every tap of the convolution that reads inside the input, in the order
/// (n, k, p, q, c, r, s): `tap(o, i, f)` with `o` the index in `[n][k][p][q]`, `i` in
/// `[n][c][h][w]` and `f` in `[k][c][r][s]`. The three references below are this walk.
fn for_each_tap(l: &Layer, mut tap: impl FnMut(usize, usize, usize)) {
    let (p, q) = (l.p(), l.q());
    for n in 0..l.nb {
        for k in 0..l.ko {
            for y in 0..p {
                for x in 0..q {
                    let o = ((n * l.ko + k) * p + y) * q + x;
                    for c in 0..l.c {
                        for r in 0..l.r {
                            let Some(h) = (y * l.su + r).checked_sub(l.ph).filter(|&h| h < l.h)
                            else {
                                continue;
                            };
                            for s in 0..l.s {
                                let Some(w) = (x * l.sv + s).checked_sub(l.pw).filter(|&w| w < l.w)
                                else {
                                    continue;
                                };
                                let i = ((n * l.c + c) * l.h + h) * l.w + w;
                                tap(o, i, ((k * l.c + c) * l.r + r) * l.s + s);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The gradient of the input from the gradient of the output `dy[n][k][p][q]`, by the
/// definition (each output's gradient sent back over its window), accumulated in f64:
/// `dx[n][c][h][w]`.
pub fn host_conv_backward_data(l: &Layer, dy: &[f32], w: &[f32]) -> Vec<f32> {
    let mut dx = vec![0.0f64; l.nb * l.c * l.h * l.w];
    for_each_tap(l, |o, i, f| dx[i] += f64::from(dy[o]) * f64::from(w[f]));
    dx.into_iter().map(|v| v as f32).collect()
}

/// The gradient of the filters from the input `x[n][c][h][w]` and the gradient of the
/// output `dy[n][k][p][q]`, by the definition, accumulated in f64: `dw[k][c][r][s]`.
pub fn host_conv_backward_filter(l: &Layer, x: &[f32], dy: &[f32]) -> Vec<f32> {
    let mut dw = vec![0.0f64; l.ko * l.crs()];
    for_each_tap(l, |o, i, f| dw[f] += f64::from(dy[o]) * f64::from(x[i]));
    dw.into_iter().map(|v| v as f32).collect()
}

/// The forward convolution on the host, accumulated in f64: `out[n][k][p][q]`.
pub fn host_conv(l: &Layer, input: &[f32], filter: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0f64; l.nb * l.ko * l.p() * l.q()];
    for_each_tap(l, |o, i, f| {
        out[o] += f64::from(input[i]) * f64::from(filter[f])
    });
    out.into_iter().map(|v| v as f32).collect()
}
