//! The Maronna robust correlation matrix (paper 000 §4.1).
//!
//! Each column is standardized by its median and its MAD (scaled to be
//! consistent at the normal). Then, for each pair of columns, a bivariate
//! M-estimate of location and scatter is found by iterative reweighting
//! with Huber weights on the Mahalanobis distance; the pair's robust
//! correlation is the scatter's off-diagonal over the product of its
//! standard deviations. Pairs are independent: that is what the farm shares
//! out, as ranges of the pair index. Deterministic, so a farmed matrix must
//! equal the serial one exactly.

use super::data::Matrix;

/// MAD scale factor: 1/Phi^-1(3/4).
const MAD_SCALE: f64 = 1.482_602_218_505_602;
/// Huber cut-off on the squared distance: the 0.9 quantile of chi-square(2).
const CUT2: f64 = 4.605_170_185_988_091;
const MAX_ITER: usize = 100;
const TOL: f64 = 1e-10;

pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median and scaled MAD of a column (MAD 0 becomes 1: a constant column).
pub fn median_mad(col: &[f64]) -> (f64, f64) {
    let mut c = col.to_vec();
    let med = median(&mut c);
    let mut dev: Vec<f64> = col.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&mut dev) * MAD_SCALE;
    (med, if mad > 0.0 { mad } else { 1.0 })
}

/// The data standardized column by column, stored column-major (each
/// variable contiguous, as the pair computation reads it).
pub fn standardize(m: &Matrix) -> Vec<f64> {
    let mut out = Vec::with_capacity(m.values.len());
    for j in 0..m.vars {
        let col = m.column(j);
        let (med, mad) = median_mad(&col);
        out.extend(col.iter().map(|x| (x - med) / mad));
    }
    out
}

/// Robust correlation of two standardized columns.
pub fn pair(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    if n < 2 {
        return 0.0;
    }
    let (mut mx, mut my) = (0.0f64, 0.0f64);
    let (mut sxx, mut sxy, mut syy) = (1.0f64, 0.0f64, 1.0f64);
    for _ in 0..MAX_ITER {
        let det = sxx * syy - sxy * sxy;
        if det.is_nan() || det <= 0.0 {
            break;
        }
        let (ixx, ixy, iyy) = (syy / det, -sxy / det, sxx / det);
        let (mut sw, mut swx, mut swy) = (0.0, 0.0, 0.0);
        let mut w = vec![0.0; n];
        for k in 0..n {
            let (dx, dy) = (x[k] - mx, y[k] - my);
            let d2 = dx * dx * ixx + 2.0 * dx * dy * ixy + dy * dy * iyy;
            w[k] = if d2 <= CUT2 { 1.0 } else { (CUT2 / d2).sqrt() };
            sw += w[k];
            swx += w[k] * x[k];
            swy += w[k] * y[k];
        }
        let (nmx, nmy) = (swx / sw, swy / sw);
        let (mut axx, mut axy, mut ayy, mut sw2) = (0.0, 0.0, 0.0, 0.0);
        for k in 0..n {
            let (dx, dy) = (x[k] - nmx, y[k] - nmy);
            let w2 = w[k] * w[k];
            axx += w2 * dx * dx;
            axy += w2 * dx * dy;
            ayy += w2 * dy * dy;
            sw2 += w2;
        }
        let (nxx, nxy, nyy) = (axx / sw2, axy / sw2, ayy / sw2);
        let change = (nmx - mx).abs().max((nmy - my).abs()).max((nxx - sxx).abs()).max((nxy - sxy).abs()).max((nyy - syy).abs());
        (mx, my, sxx, sxy, syy) = (nmx, nmy, nxx, nxy, nyy);
        if change < TOL {
            break;
        }
    }
    let d = (sxx * syy).sqrt();
    if d > 0.0 {
        (sxy / d).clamp(-1.0, 1.0)
    } else {
        0.0
    }
}

/// Number of pairs i < j of `vars` variables.
pub fn pairs(vars: usize) -> u64 {
    (vars as u64) * (vars.saturating_sub(1) as u64) / 2
}

/// The pair (i, j), i < j, with linear index `p` (row by row).
pub fn pair_at(vars: usize, mut p: u64) -> (usize, usize) {
    let mut i = 0;
    loop {
        let row = (vars - 1 - i) as u64;
        if p < row {
            return (i, i + 1 + p as usize);
        }
        p -= row;
        i += 1;
    }
}

/// Correlations of pairs `start..end` from standardized column-major data.
pub fn pair_range(z: &[f64], samples: usize, vars: usize, start: u64, end: u64) -> Vec<f64> {
    if start >= end {
        return vec![];
    }
    let (mut i, mut j) = pair_at(vars, start);
    let mut out = Vec::with_capacity((end - start) as usize);
    for _ in start..end {
        out.push(pair(&z[i * samples..(i + 1) * samples], &z[j * samples..(j + 1) * samples]));
        j += 1;
        if j == vars {
            i += 1;
            j = i + 1;
        }
    }
    out
}

/// The whole matrix serially (row-major vars x vars, 1 on the diagonal).
pub fn serial(m: &Matrix) -> Vec<f64> {
    let z = standardize(m);
    let flat = pair_range(&z, m.samples, m.vars, 0, pairs(m.vars));
    assemble(m.vars, &flat)
}

/// A full symmetric matrix from the pair values in pair order.
pub fn assemble(vars: usize, flat: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; vars * vars];
    let mut p = 0;
    for i in 0..vars {
        c[i * vars + i] = 1.0;
        for j in i + 1..vars {
            let v = flat.get(p).copied().unwrap_or(f64::NAN);
            c[i * vars + j] = v;
            c[j * vars + i] = v;
            p += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::data::synthetic;

    #[test]
    fn median_and_mad() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let (m, s) = median_mad(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        assert_eq!(m, 3.0);
        assert!((s - MAD_SCALE).abs() < 1e-12);
    }

    #[test]
    fn pair_indexing_covers_every_pair_once() {
        let v = 6;
        let all: Vec<(usize, usize)> = (0..pairs(v)).map(|p| pair_at(v, p)).collect();
        assert_eq!(all.len(), 15);
        assert_eq!(all[0], (0, 1));
        assert_eq!(all[5], (1, 2));
        assert_eq!(all[14], (4, 5));
    }

    #[test]
    fn robust_correlation_resists_an_outlier_that_ruins_pearson() {
        let n = 60;
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 3.0).collect();
        let mut y: Vec<f64> = x.iter().enumerate().map(|(i, v)| v + 0.1 * ((i * 7 % 11) as f64 - 5.0) / 5.0).collect();
        y[10] = -200.0;
        y[20] = 250.0;
        let m = Matrix { samples: n, vars: 2, values: x.iter().zip(&y).flat_map(|(a, b)| [*a, *b]).collect() };
        let z = standardize(&m);
        let r = pair(&z[..n], &z[n..]);
        assert!(r > 0.95, "robust r = {r}");
        let pearson = {
            let (mx, my) = (x.iter().sum::<f64>() / n as f64, y.iter().sum::<f64>() / n as f64);
            let c: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
            let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
            let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
            c / (vx * vy).sqrt()
        };
        assert!(pearson < 0.5, "pearson {pearson}");
    }

    #[test]
    fn ranges_reassemble_to_the_serial_matrix() {
        let m = synthetic(30, 7, 0.05, 1);
        let z = standardize(&m);
        let p = pairs(7);
        let mut flat = pair_range(&z, 30, 7, 0, 5);
        flat.extend(pair_range(&z, 30, 7, 5, p));
        let c = assemble(7, &flat);
        assert_eq!(c, serial(&m));
        assert!(c.iter().all(|v| v.is_finite() && v.abs() <= 1.0));
    }
}
