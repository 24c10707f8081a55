//! Counters the forwarder keeps per one-way link, and their text form
//! (`link SRC DST PATH key=value ...`, one line per link, plus a `global` line).

use crate::error::{EmuError, Result};
use std::fmt::Write as _;

/// Counters of one direction of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets and bytes that entered the link.
    pub offered_pkts: u64,
    pub offered_bytes: u64,
    /// Packets and bytes written to the destination host.
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    /// Drops by reason.
    pub drop_loss: u64,
    pub drop_queue: u64,
    pub drop_down: u64,
    /// The destination TUN refused the write, or the packet pool was full.
    pub drop_other: u64,
    /// Most bytes ever waiting in the bandwidth queue.
    pub queue_hw_bytes: u64,
}

/// Counters of one link, with its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkReport {
    pub src: usize,
    pub dst: usize,
    pub path: u8,
    /// False while the link is down.
    pub up: bool,
    pub counters: LinkCounters,
}

/// Counters not tied to one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GlobalCounters {
    /// Non-IPv4 packets (IPv6 is disabled in the hosts, so these are rare).
    pub not_ipv4: u64,
    /// IPv4 packets to an address that is not an emulated host.
    pub no_route: u64,
    /// Times the packet pool was empty and a packet was dropped.
    pub pool_exhausted: u64,
    /// Packet buffers the pool holds.
    pub pool_buffers: u64,
}

/// A snapshot of every counter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub global: GlobalCounters,
    pub links: Vec<LinkReport>,
}

const LINK_KEYS: [&str; 9] =
    ["offered_pkts", "offered_bytes", "delivered_pkts", "delivered_bytes", "drop_loss", "drop_queue", "drop_down", "drop_other", "queue_hw_bytes"];

impl LinkCounters {
    fn fields(&self) -> [u64; 9] {
        [
            self.offered_pkts,
            self.offered_bytes,
            self.delivered_pkts,
            self.delivered_bytes,
            self.drop_loss,
            self.drop_queue,
            self.drop_down,
            self.drop_other,
            self.queue_hw_bytes,
        ]
    }

    fn fields_mut(&mut self) -> [&mut u64; 9] {
        [
            &mut self.offered_pkts,
            &mut self.offered_bytes,
            &mut self.delivered_pkts,
            &mut self.delivered_bytes,
            &mut self.drop_loss,
            &mut self.drop_queue,
            &mut self.drop_down,
            &mut self.drop_other,
            &mut self.queue_hw_bytes,
        ]
    }
}

impl Counters {
    /// The report of `src -> dst` on `path`.
    pub fn link(&self, src: usize, dst: usize, path: u8) -> Option<&LinkReport> {
        self.links.iter().find(|l| l.src == src && l.dst == dst && l.path == path)
    }

    /// Machine-readable text, read back by `Counters::parse`.
    pub fn to_text(&self) -> String {
        let g = &self.global;
        let mut s =
            format!("global not_ipv4={} no_route={} pool_exhausted={} pool_buffers={}\n", g.not_ipv4, g.no_route, g.pool_exhausted, g.pool_buffers);
        for l in &self.links {
            let _ = write!(s, "link {} {} {} up={}", l.src, l.dst, l.path, l.up as u8);
            for (k, v) in LINK_KEYS.iter().zip(l.counters.fields()) {
                let _ = write!(s, " {k}={v}");
            }
            s.push('\n');
        }
        s
    }

    /// Parse the text of `to_text`.
    pub fn parse(text: &str) -> Result<Counters> {
        let bad = |l: &str| EmuError::Parse(format!("counters line `{l}`"));
        let mut c = Counters::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut words = line.split_whitespace();
            let kind = words.next().ok_or_else(|| bad(line))?;
            let num = |w: Option<&str>| -> Result<u64> { w.and_then(|w| w.parse().ok()).ok_or_else(|| bad(line)) };
            match kind {
                "global" => {
                    for kv in words {
                        let (k, v) = kv.split_once('=').ok_or_else(|| bad(line))?;
                        let v: u64 = v.parse().map_err(|_| bad(line))?;
                        match k {
                            "not_ipv4" => c.global.not_ipv4 = v,
                            "no_route" => c.global.no_route = v,
                            "pool_exhausted" => c.global.pool_exhausted = v,
                            "pool_buffers" => c.global.pool_buffers = v,
                            _ => {}
                        }
                    }
                }
                "link" => {
                    let src = num(words.next())? as usize;
                    let dst = num(words.next())? as usize;
                    let path = num(words.next())? as u8;
                    let mut r = LinkReport { src, dst, path, up: true, counters: LinkCounters::default() };
                    for kv in words {
                        let (k, v) = kv.split_once('=').ok_or_else(|| bad(line))?;
                        let v: u64 = v.parse().map_err(|_| bad(line))?;
                        if k == "up" {
                            r.up = v != 0;
                        } else if let Some(i) = LINK_KEYS.iter().position(|x| *x == k) {
                            *r.counters.fields_mut()[i] = v;
                        }
                    }
                    c.links.push(r);
                }
                _ => return Err(bad(line)),
            }
        }
        Ok(c)
    }

    /// A table for people: one row per link that saw traffic or is down.
    pub fn to_table(&self, all: bool) -> String {
        let mut s = format!(
            "{:<10} {:>4} {:>10} {:>12} {:>10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>10}\n",
            "link", "up", "offered", "bytes", "delivered", "bytes", "d_loss", "d_queue", "d_down", "d_other", "queue_hw"
        );
        for l in self.links.iter().filter(|l| all || !l.up || l.counters.offered_pkts > 0) {
            let c = &l.counters;
            let name = if l.path == 0 { format!("{}->{}", l.src, l.dst) } else { format!("{}->{}/p{}", l.src, l.dst, l.path) };
            let _ = writeln!(
                s,
                "{:<10} {:>4} {:>10} {:>12} {:>10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>10}",
                name,
                if l.up { "up" } else { "DOWN" },
                c.offered_pkts,
                c.offered_bytes,
                c.delivered_pkts,
                c.delivered_bytes,
                c.drop_loss,
                c.drop_queue,
                c.drop_down,
                c.drop_other,
                c.queue_hw_bytes
            );
        }
        let g = &self.global;
        let _ =
            writeln!(s, "not ipv4: {}  no route: {}  pool exhausted: {}  pool buffers: {}", g.not_ipv4, g.no_route, g.pool_exhausted, g.pool_buffers);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let mut c = Counters::default();
        c.global.no_route = 3;
        c.global.pool_buffers = 17;
        let lc = LinkCounters { offered_pkts: 10, drop_queue: 2, queue_hw_bytes: 9000, ..LinkCounters::default() };
        c.links.push(LinkReport { src: 0, dst: 1, path: 0, up: true, counters: lc });
        c.links.push(LinkReport { src: 1, dst: 0, path: 1, up: false, counters: LinkCounters::default() });
        let back = Counters::parse(&c.to_text()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.link(1, 0, 1).map(|l| l.up), Some(false));
        assert!(c.to_table(false).contains("DOWN"));
        assert!(Counters::parse("bogus 1 2").is_err());
    }
}
