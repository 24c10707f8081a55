//! Parsing of the human units used in profiles: `20ms`, `1%`, `100mbit`, `64kib`.

use crate::error::{EmuError, Result};

fn split_number(s: &str) -> Result<(f64, &str)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().map_err(|_| EmuError::Parse(format!("`{s}`: expected a number with a unit")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(EmuError::Parse(format!("`{s}`: must be a finite non-negative number")));
    }
    Ok((v, unit.trim()))
}

/// A duration in nanoseconds: `250us`, `20ms`, `1.5s` (a bare number is ms).
pub fn parse_duration_ns(s: &str) -> Result<u64> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "us" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        u => return Err(EmuError::Parse(format!("`{s}`: unknown time unit `{u}`"))),
    };
    Ok((v * mult).round() as u64)
}

/// A probability: `1%`, `0.5%` or a fraction `0.01`.
pub fn parse_probability(s: &str) -> Result<f64> {
    let (v, unit) = split_number(s)?;
    let p = match unit {
        "%" => v / 100.0,
        "" => v,
        u => return Err(EmuError::Parse(format!("`{s}`: unknown probability unit `{u}`"))),
    };
    if p > 1.0 {
        return Err(EmuError::Parse(format!("`{s}`: probability above 100%")));
    }
    Ok(p)
}

/// A bit rate in bits per second: `100mbit`, `1gbit`, `512kbit`, `9600bit`.
/// `0` means unlimited.
pub fn parse_rate_bps(s: &str) -> Result<u64> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "bit" | "bps" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        u => return Err(EmuError::Parse(format!("`{s}`: unknown rate unit `{u}` (bit, kbit, mbit, gbit)"))),
    };
    Ok((v * mult).round() as u64)
}

/// A size in bytes: `1500`, `64kb` (1000), `64kib` (1024), `1mb`, `1mib`.
pub fn parse_bytes(s: &str) -> Result<u64> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "kib" | "k" => 1024.0,
        "mb" => 1e6,
        "mib" | "m" => 1024.0 * 1024.0,
        u => return Err(EmuError::Parse(format!("`{s}`: unknown size unit `{u}`"))),
    };
    Ok((v * mult).round() as u64)
}

/// Render nanoseconds the way `parse_duration_ns` reads them back.
pub fn fmt_duration_ns(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("20ms").unwrap(), 20_000_000);
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("7").unwrap(), 7_000_000);
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("-5ms").is_err());
        assert_eq!(fmt_duration_ns(20_000_000), "20ms");
        assert_eq!(fmt_duration_ns(1_500), "1500ns");
    }

    #[test]
    fn probabilities_rates_sizes() {
        assert!((parse_probability("1%").unwrap() - 0.01).abs() < 1e-12);
        assert!((parse_probability("0.02").unwrap() - 0.02).abs() < 1e-12);
        assert!(parse_probability("150%").is_err());
        assert_eq!(parse_rate_bps("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate_bps("1.5gbit").unwrap(), 1_500_000_000);
        assert!(parse_rate_bps("100mb").is_err());
        assert_eq!(parse_bytes("64kib").unwrap(), 65536);
        assert_eq!(parse_bytes("64kb").unwrap(), 64000);
        assert_eq!(parse_bytes("1500").unwrap(), 1500);
    }
}
