//! A grid: MPI implementations (with their transport) x one-way latencies x
//! loss rates x message sizes x repetitions. Every point is one run.

use crate::error::BenchError;
use std::fmt;

/// Which MPI runs a cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Implementation {
    /// wanmpi with a transport (`WANMPI_TRANSPORT`), launched by our mpirun.
    Wanmpi(String),
    /// Open MPI's `mpirun.openmpi`, TCP BTL.
    OpenMpi,
    /// MPICH's hydra `mpirun.mpich` (ch4:ucx over TCP on Debian).
    Mpich,
}

impl Implementation {
    /// `wanmpi:tcp`, `wanmpi:sctp`, `openmpi`, `mpich` (`wanmpi` alone is tcp).
    pub fn parse(s: &str) -> Result<Implementation, BenchError> {
        match s.trim() {
            "openmpi" | "ompi" => Ok(Implementation::OpenMpi),
            "mpich" => Ok(Implementation::Mpich),
            "wanmpi" => Ok(Implementation::Wanmpi("tcp".into())),
            other => match other.strip_prefix("wanmpi:") {
                Some(t) if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') => {
                    Ok(Implementation::Wanmpi(t.to_string()))
                }
                _ => Err(BenchError::Usage(format!("implementation {other:?}: expected wanmpi:TRANSPORT, openmpi or mpich"))),
            },
        }
    }

    /// Whether the program is a C program compiled with this MPI's mpicc.
    pub fn is_c(&self) -> bool {
        !matches!(self, Implementation::Wanmpi(_))
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Implementation::Wanmpi(t) => write!(f, "wanmpi:{t}"),
            Implementation::OpenMpi => f.write_str("openmpi"),
            Implementation::Mpich => f.write_str("mpich"),
        }
    }
}

/// The network of one emulation: every link gets this one-way delay and loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    pub delay_ms: f64,
    /// Loss rate in percent (1.0 = 1%).
    pub loss_pct: f64,
}

impl Network {
    /// The emulator's profile text for this network.
    pub fn profile(&self) -> String {
        format!("delay={}ms,loss={}%", self.delay_ms, self.loss_pct)
    }
}

/// One run: what the CSV's key columns hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub implementation: Implementation,
    pub net: Network,
    pub size: u64,
    pub rep: u32,
}

impl Cell {
    /// The identity used to find the cell in an existing CSV (`--resume`).
    pub fn key(&self) -> String {
        format!("{}|{}|{}|{}|{}", self.implementation, fmt_num(self.net.delay_ms), fmt_num(self.net.loss_pct), self.size, self.rep)
    }
}

/// A number without a trailing `.0` (20 rather than 20.0, but 0.5 stays).
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[derive(Debug, Clone)]
pub struct Grid {
    pub implementations: Vec<Implementation>,
    pub delays_ms: Vec<f64>,
    pub losses_pct: Vec<f64>,
    pub sizes: Vec<u64>,
    pub reps: u32,
}

impl Grid {
    pub fn networks(&self) -> Vec<Network> {
        let mut v = Vec::new();
        for &delay_ms in &self.delays_ms {
            for &loss_pct in &self.losses_pct {
                v.push(Network { delay_ms, loss_pct });
            }
        }
        v
    }

    /// The runs on one network, in the order they are made: repetitions
    /// outermost and implementations innermost, so implementations are
    /// measured side by side rather than one after the other.
    pub fn cells_on(&self, net: Network) -> Vec<Cell> {
        let mut v = Vec::new();
        for rep in 0..self.reps {
            for &size in &self.sizes {
                for imp in &self.implementations {
                    v.push(Cell { implementation: imp.clone(), net, size, rep });
                }
            }
        }
        v
    }

    pub fn total(&self) -> usize {
        self.networks().len() * self.sizes.len() * self.implementations.len() * self.reps as usize
    }
}

/// `a,b,c` into values, each parsed by `one`.
pub fn parse_list<T>(what: &str, s: &str, one: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, BenchError> {
    let v: Vec<T> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| one(x).ok_or_else(|| BenchError::Usage(format!("{what}: cannot read {x:?}"))))
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(BenchError::Usage(format!("{what}: empty list")));
    }
    Ok(v)
}

/// `20`, `20ms`, `0.5ms`, `1s` into milliseconds.
pub fn parse_ms(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (s, 1.0)
    };
    num.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| x * scale)
}

/// `1`, `1%` into percent; a bare number is percent too.
pub fn parse_pct(s: &str) -> Option<f64> {
    s.trim_end_matches('%').trim().parse::<f64>().ok().filter(|x| (0.0..=100.0).contains(x))
}

/// `30720`, `30k`/`30KiB` (x1024), `1M`/`1MiB`.
pub fn parse_size(s: &str) -> Option<u64> {
    let l = s.to_ascii_lowercase();
    let l = l.trim_end_matches("ib").trim_end_matches('b');
    let (num, mul) = match l.chars().last() {
        Some('k') => (&l[..l.len() - 1], 1024),
        Some('m') => (&l[..l.len() - 1], 1024 * 1024),
        _ => (l, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mul))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_values() {
        assert_eq!(Implementation::parse("wanmpi:sctp").unwrap(), Implementation::Wanmpi("sctp".into()));
        assert_eq!(Implementation::parse("wanmpi").unwrap().to_string(), "wanmpi:tcp");
        assert!(Implementation::parse("lam").is_err());
        assert!(Implementation::parse("wanmpi:").is_err());
        assert_eq!(parse_list("d", "0,20ms,1s", parse_ms).unwrap(), vec![0.0, 20.0, 1000.0]);
        assert_eq!(parse_list("l", "0,1%,2.5", parse_pct).unwrap(), vec![0.0, 1.0, 2.5]);
        assert!(parse_list("l", "101", parse_pct).is_err());
        assert_eq!(parse_list("s", "30KiB,300k,1M,7", parse_size).unwrap(), vec![30720, 307200, 1 << 20, 7]);
        assert!(parse_list("s", "", parse_size).is_err());
        assert_eq!(fmt_num(20.0), "20");
        assert_eq!(fmt_num(0.5), "0.5");
    }

    #[test]
    fn cells_interleave_implementations() {
        let g = Grid {
            implementations: vec![Implementation::Wanmpi("tcp".into()), Implementation::OpenMpi],
            delays_ms: vec![0.0, 20.0],
            losses_pct: vec![0.0, 1.0, 2.0],
            sizes: vec![1, 2],
            reps: 3,
        };
        assert_eq!(g.networks().len(), 6);
        assert_eq!(g.total(), 6 * 2 * 2 * 3);
        let c = g.cells_on(g.networks()[1]);
        assert_eq!(c.len(), 12);
        assert_eq!((c[0].implementation.clone(), c[1].implementation.clone()), (Implementation::Wanmpi("tcp".into()), Implementation::OpenMpi));
        assert_eq!(c[1].key(), "openmpi|0|1|1|0");
    }
}
