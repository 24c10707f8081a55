//! `wanmpi bench --outage AT:SECS`: every run of the grid loses every link
//! AT seconds after it starts, for SECS seconds, then gets them back, so that
//! a grid shows how each implementation rides through a WAN outage (issue
//! 25). The time lost is the run's time less that of the same grid run
//! without `--outage`.

use crate::error::BenchError;
use std::sync::mpsc;
use std::time::Duration;
use wanmpi_emulator::Emulation;

/// When the links go down (after the run's start) and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    pub at: Duration,
    pub length: Duration,
}

impl Outage {
    /// `AT:SECS` in seconds, e.g. `5:60`.
    pub fn parse(text: &str) -> Result<Outage, BenchError> {
        let bad = || BenchError::Usage(format!("--outage {text:?}: expected AT:SECS in seconds, e.g. 5:60"));
        let (at, length) = text.split_once(':').ok_or_else(bad)?;
        let secs = |s: &str| s.trim().parse::<f64>().ok().and_then(|v| Duration::try_from_secs_f64(v).ok()).ok_or_else(bad);
        let o = Outage { at: secs(at)?, length: secs(length)? };
        if o.length.is_zero() {
            return Err(bad());
        }
        Ok(o)
    }
}

/// Sets every link between the first `hosts` hosts up or down; a refusal
/// is printed (the forwarder may be gone with a failed run) and the rest go on.
fn set_all(emu: &Emulation, hosts: usize, up: bool) {
    for a in 0..hosts {
        for b in a + 1..hosts {
            if let Err(e) = emu.set_link(a, b, up, None) {
                eprintln!("wanmpi bench: link {a} {b} {}: {e}", if up { "up" } else { "down" });
            }
        }
    }
}

/// Runs `run`, cutting the links as `outage` says meanwhile; the links are
/// up again when this returns, however early `run` ended.
pub fn around<R>(emu: &Emulation, hosts: usize, outage: Option<Outage>, run: impl FnOnce() -> R) -> R {
    let Some(o) = outage else { return run() };
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let cutter = s.spawn(move || {
            // A receive with a timeout is a sleep that ends when the run does.
            if finished.recv_timeout(o.at) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            set_all(emu, hosts, false);
            let _ = finished.recv_timeout(o.length);
            set_all(emu, hosts, true);
        });
        let r = run();
        let _ = done.send(());
        let _ = cutter.join();
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_and_length_parse() {
        assert_eq!(Outage::parse("5:60").unwrap(), Outage { at: Duration::from_secs(5), length: Duration::from_secs(60) });
        assert_eq!(Outage::parse("0.5:2.5").unwrap().length, Duration::from_millis(2500));
        for bad in ["5", "5:0", "a:1", "-1:3", ""] {
            assert!(Outage::parse(bad).is_err(), "{bad}");
        }
    }
}
