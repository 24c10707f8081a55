//! The conditions of one direction of one link, and their text form
//! `delay=20ms,jitter=1ms,loss=1%,rate=100mbit,queue=50ms`.

use crate::error::{EmuError, Result};
use crate::units::{fmt_duration_ns, parse_bytes, parse_duration_ns, parse_probability, parse_rate_bps};
use std::fmt;

/// Size of the drop-tail queue in front of a rate-limited link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueLimit {
    /// At most this many bytes waiting (including the one being sent).
    Bytes(u64),
    /// At most this much time worth of bytes at the link's rate.
    Time { ns: u64 },
}

/// Gilbert-Elliott burst loss: a two-state Markov chain stepped once per packet.
/// In the good state packets are lost with `LinkProfile::loss`, in the bad
/// state with `bad_loss`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Probability per packet of moving good -> bad.
    pub p_good_to_bad: f64,
    /// Probability per packet of moving bad -> good (1 / mean burst length).
    pub p_bad_to_good: f64,
    /// Loss probability while in the bad state.
    pub bad_loss: f64,
}

/// One direction of one link. The default is a perfect link: no delay, no
/// loss, unlimited rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkProfile {
    /// One-way delay added to every packet.
    pub delay_ns: u64,
    /// Each packet's delay is `delay` plus a uniform draw in `[-jitter, +jitter]`
    /// (clamped at zero).
    pub jitter_ns: u64,
    /// Independent (Bernoulli) loss probability, or the good-state loss under
    /// Gilbert-Elliott.
    pub loss: f64,
    /// Correlated burst loss, if set.
    pub burst: Option<GilbertElliott>,
    /// Bandwidth cap in bits per second; 0 = unlimited.
    pub rate_bps: u64,
    /// Drop-tail queue bound, used only when `rate_bps > 0`.
    pub queue: QueueLimit,
    /// Allow jitter to reorder packets. Off by default: a packet never leaves
    /// before the one sent ahead of it on the same link.
    pub reorder: bool,
}

impl Default for LinkProfile {
    fn default() -> Self {
        LinkProfile { delay_ns: 0, jitter_ns: 0, loss: 0.0, burst: None, rate_bps: 0, queue: QueueLimit::Time { ns: 100_000_000 }, reorder: false }
    }
}

impl LinkProfile {
    /// Parse `key=value,key=value` on top of the default profile.
    pub fn parse(s: &str) -> Result<Self> {
        let mut p = LinkProfile::default();
        p.apply(s)?;
        Ok(p)
    }

    /// Override the keys named in `s`, keeping the others. Keys: `delay`,
    /// `jitter`, `loss`, `rate`, `queue` (bytes such as `64kib`, or time such
    /// as `50ms`), `reorder` (`yes`/`no`), and for burst loss `burst_p`
    /// (good->bad), `burst_r` (bad->good), `burst_loss` (bad-state loss,
    /// default 100%).
    pub fn apply(&mut self, s: &str) -> Result<()> {
        for item in s.split([',', ' ']).filter(|t| !t.trim().is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| EmuError::Parse(format!("`{item}`: expected key=value")))?;
            let v = v.trim();
            match k.trim() {
                "delay" => self.delay_ns = parse_duration_ns(v)?,
                "jitter" => self.jitter_ns = parse_duration_ns(v)?,
                "loss" => self.loss = parse_probability(v)?,
                "rate" => self.rate_bps = parse_rate_bps(v)?,
                "queue" => self.queue = parse_queue(v)?,
                "reorder" => self.reorder = parse_bool(v)?,
                "burst_p" => self.burst_mut().p_good_to_bad = parse_probability(v)?,
                "burst_r" => self.burst_mut().p_bad_to_good = parse_probability(v)?,
                "burst_loss" => self.burst_mut().bad_loss = parse_probability(v)?,
                other => return Err(EmuError::Parse(format!("unknown profile key `{other}`"))),
            }
        }
        if let Some(b) = &self.burst {
            if b.p_good_to_bad > 0.0 && b.p_bad_to_good == 0.0 {
                return Err(EmuError::Parse("burst_p set without burst_r: the link would stay bad forever".into()));
            }
        }
        Ok(())
    }

    fn burst_mut(&mut self) -> &mut GilbertElliott {
        self.burst.get_or_insert(GilbertElliott { p_good_to_bad: 0.0, p_bad_to_good: 0.0, bad_loss: 1.0 })
    }
}

fn parse_queue(v: &str) -> Result<QueueLimit> {
    let lower = v.to_ascii_lowercase();
    if lower.ends_with("ms") || lower.ends_with("us") || lower.ends_with('s') && !lower.ends_with("bs") {
        Ok(QueueLimit::Time { ns: parse_duration_ns(v)? })
    } else {
        Ok(QueueLimit::Bytes(parse_bytes(v)?))
    }
}

fn parse_bool(v: &str) -> Result<bool> {
    match v {
        "1" | "yes" | "true" | "on" => Ok(true),
        "0" | "no" | "false" | "off" => Ok(false),
        _ => Err(EmuError::Parse(format!("`{v}`: expected yes or no"))),
    }
}

impl fmt::Display for LinkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delay={},jitter={},loss={}", fmt_duration_ns(self.delay_ns), fmt_duration_ns(self.jitter_ns), self.loss)?;
        if self.rate_bps > 0 {
            write!(f, ",rate={}bit", self.rate_bps)?;
            match self.queue {
                QueueLimit::Bytes(b) => write!(f, ",queue={b}b")?,
                QueueLimit::Time { ns } => write!(f, ",queue={}", fmt_duration_ns(ns))?,
            }
        }
        if let Some(b) = &self.burst {
            write!(f, ",burst_p={},burst_r={},burst_loss={}", b.p_good_to_bad, b.p_bad_to_good, b.bad_loss)?;
        }
        if self.reorder {
            write!(f, ",reorder=yes")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_round_trips() {
        let p = LinkProfile::parse("delay=20ms,jitter=1ms,loss=1%,rate=100mbit,queue=64kib").unwrap();
        assert_eq!(p.delay_ns, 20_000_000);
        assert_eq!(p.jitter_ns, 1_000_000);
        assert!((p.loss - 0.01).abs() < 1e-12);
        assert_eq!(p.rate_bps, 100_000_000);
        assert_eq!(p.queue, QueueLimit::Bytes(65536));
        let again = LinkProfile::parse(&p.to_string()).unwrap();
        assert_eq!(p, again);
    }

    #[test]
    fn queue_in_time_and_burst() {
        let p = LinkProfile::parse("rate=10mbit,queue=50ms,burst_p=1%,burst_r=25%").unwrap();
        assert_eq!(p.queue, QueueLimit::Time { ns: 50_000_000 });
        let b = p.burst.unwrap();
        assert!((b.p_bad_to_good - 0.25).abs() < 1e-12);
        assert_eq!(b.bad_loss, 1.0);
        assert_eq!(LinkProfile::parse(&p.to_string()).unwrap(), p);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(LinkProfile::parse("delay").is_err());
        assert!(LinkProfile::parse("colour=blue").is_err());
        assert!(LinkProfile::parse("burst_p=1%").is_err());
        assert!(LinkProfile::parse("loss=2").is_err());
    }
}
