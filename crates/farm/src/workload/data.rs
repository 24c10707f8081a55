//! Input matrices for the robust correlation: a seeded synthetic
//! gene-expression-like set with planted outliers, or a CSV file.
//! Layout: row-major, `samples` rows by `vars` columns.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub samples: usize,
    pub vars: usize,
    pub values: Vec<f64>,
}

impl Matrix {
    pub fn column(&self, j: usize) -> Vec<f64> {
        (0..self.samples).map(|i| self.values[i * self.vars + j]).collect()
    }
}

fn normal(r: &mut ChaCha8Rng) -> f64 {
    // Box-Muller; 1-u keeps the log finite.
    let u: f64 = r.gen();
    let v: f64 = r.gen();
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Expression of `vars` genes in `samples` samples: genes load on a few
/// shared factors (so they correlate), with noise, and a fraction of
/// entries replaced by gross outliers (what the robust method resists).
pub fn synthetic(samples: usize, vars: usize, outlier_frac: f64, seed: u64) -> Matrix {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    const FACTORS: usize = 4;
    let loadings: Vec<f64> = (0..vars * FACTORS).map(|_| r.gen_range(-1.0..1.0)).collect();
    let mut values = vec![0.0; samples * vars];
    for i in 0..samples {
        let f: Vec<f64> = (0..FACTORS).map(|_| normal(&mut r)).collect();
        for j in 0..vars {
            let signal: f64 = (0..FACTORS).map(|k| loadings[j * FACTORS + k] * f[k]).sum();
            values[i * vars + j] = 8.0 + signal + 0.5 * normal(&mut r);
        }
    }
    for v in values.iter_mut() {
        if r.gen::<f64>() < outlier_frac {
            let sign = if r.gen::<bool>() { 1.0 } else { -1.0 };
            *v += sign * r.gen_range(10.0..25.0);
        }
    }
    Matrix { samples, vars, values }
}

#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("reading {0}: {1}")]
    Io(String, std::io::Error),
    #[error("line {line}: {why}")]
    Bad { line: usize, why: String },
    #[error("no data rows")]
    Empty,
}

/// Rows are samples, columns variables, comma-separated numbers; a first
/// line that is not numeric is taken as a header.
pub fn parse_csv(text: &str) -> Result<Matrix, CsvError> {
    let mut values = vec![];
    let mut vars = 0;
    let mut samples = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let row: Result<Vec<f64>, _> = line.split(',').map(|f| f.trim().parse::<f64>()).collect();
        let row = match row {
            Ok(r) => r,
            Err(_) if samples == 0 && vars == 0 => continue,
            Err(e) => return Err(CsvError::Bad { line: n + 1, why: e.to_string() }),
        };
        if vars == 0 {
            vars = row.len();
        } else if row.len() != vars {
            return Err(CsvError::Bad { line: n + 1, why: format!("{} fields, expected {vars}", row.len()) });
        }
        values.extend(row);
        samples += 1;
    }
    if samples == 0 {
        return Err(CsvError::Empty);
    }
    Ok(Matrix { samples, vars, values })
}

pub fn read_csv(path: &str) -> Result<Matrix, CsvError> {
    let text = std::fs::read_to_string(path).map_err(|e| CsvError::Io(path.into(), e))?;
    parse_csv(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_header_and_errors() {
        let m = parse_csv("a,b\n1,2\n3, 4.5\n").unwrap();
        assert_eq!((m.samples, m.vars), (2, 2));
        assert_eq!(m.values, vec![1.0, 2.0, 3.0, 4.5]);
        assert_eq!(m.column(1), vec![2.0, 4.5]);
        assert!(matches!(parse_csv("1,2\n3\n"), Err(CsvError::Bad { line: 2, .. })));
        assert!(matches!(parse_csv("x,y\n"), Err(CsvError::Empty)));
    }

    #[test]
    fn synthetic_is_seeded() {
        assert_eq!(synthetic(5, 4, 0.1, 3), synthetic(5, 4, 0.1, 3));
        assert_ne!(synthetic(5, 4, 0.1, 3), synthetic(5, 4, 0.1, 4));
    }
}
