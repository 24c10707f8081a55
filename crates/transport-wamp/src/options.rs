//! Settings of the wamp transport, with the WAMP paper's knob names where it
//! has one, defaults, and WANMPI_WAMP_* environment overrides.

use crate::rate::Mode;
use std::net::IpAddr;
use std::time::Duration;
use wanmpi_transport::TransportError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fec {
    Off,
    /// Repair packets sized from the measured loss rate (none without loss).
    Auto,
    /// `m` repair packets per group of `k` packets, always.
    Fixed {
        k: u8,
        m: u8,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct WampOptions {
    /// Address peers reach this rank at (from the launcher; default 127.0.0.1).
    pub publish_addr: IpAddr,
    /// Ordered channels per peer (WANMPI_WAMP_CHANNELS, 64): as sctp's
    /// streams, (context, tag) hashed onto them; channels cost nothing here.
    pub channels: u16,
    /// UDP payload per datagram (the paper's PACKETSIZE, WANMPI_WAMP_PACKETSIZE);
    /// 0 = from the route's MTU (1472 on Ethernet, ~64 KiB on loopback).
    /// The paper's 4 KB means IP fragments on Ethernet.
    pub packet_size: usize,
    /// Largest frame (WANMPI_WAMP_MAX_FRAME, 1 MiB).
    pub max_frame: usize,
    /// Receive buffer we grant each peer, bytes (WANMPI_WAMP_WINDOW, 16 MiB).
    pub window: u64,
    /// Rate control: `model` (default) or `paper` (WANMPI_WAMP_CC).
    pub cc: Mode,
    /// Paper mode: ACK after this fraction of a frame arrived (ACK_FREQ, 0.1).
    pub ack_freq: f64,
    /// ACK at once after this many ack-eliciting packets (WANMPI_WAMP_ACK_EVERY, 2;
    /// paper mode ignores it and uses ACK_FREQ).
    pub ack_every: u32,
    /// Longest a receiver holds an ACK (the paper's INT_ACK_TIMEOUT, 1 ms).
    pub int_ack_timeout: Duration,
    /// Paper mode's fixed retransmission timeout (XMT_TIMEOUT, 50 ms); the
    /// model mode derives its probe timeout from the measured RTT.
    pub xmt_timeout: Duration,
    /// Back-off when the socket's send buffer is full (OVERFLOW_TIMEOUT, 1 ms).
    pub overflow_timeout: Duration,
    /// Paper mode: send a whole frame before handling ACKs (UNINTERRUPTED, 1).
    pub uninterrupted: bool,
    /// Packets sent before the first rate sample (WANMPI_WAMP_INITIAL_WINDOW,
    /// 128). An MPI job's first messages to a far peer are often its largest
    /// burst (a farm hands every worker its first tasks at once); 32 packets
    /// cost the 128 KiB plain-MPI farm at 80 ms one way about 0.3 s more at
    /// no loss and made it stall at 1 % (docs/benchmarks.md "wamp").
    pub initial_window: u32,
    /// AEAD on every datagram (WANMPI_WAMP_ENCRYPT, 1; 0 only to measure the cost).
    pub encrypt: bool,
    /// Forward error correction (WANMPI_WAMP_FEC: auto (default), off, or K:M).
    pub fec: Fec,
    /// Send runs of datagrams with one system call through UDP segmentation
    /// offload where the kernel has it (WANMPI_WAMP_GSO, 1).
    pub gso: bool,
    /// Socket buffers, bytes (WANMPI_WAMP_UDP_BUF, 4 MiB).
    pub udp_buf: usize,
    /// Setup must finish within this (WANMPI_WAMP_SETUP_TIMEOUT_MS, 60 s).
    pub setup_timeout: Duration,
    /// Where a NAT is in play (a candidate list with a reflexive address,
    /// or a published address on no interface), a peer none of whose
    /// candidates answered within this is unreachable: setup fails naming
    /// the ranks and candidates (WANMPI_WAMP_PUNCH_TIMEOUT_MS, 6 s).
    pub punch_timeout: Duration,
    /// A peer silent this long while we wait for it is lost: the job's
    /// outage limit (WANMPI_OUTAGE_LIMIT, 600 s; `wanmpi_transport::outage`),
    /// or WANMPI_WAMP_PEER_TIMEOUT_MS for wamp alone. A dead process is
    /// told by the launcher long before; a rank computing without MPI calls
    /// and without a progress thread answers nothing meanwhile either.
    pub peer_timeout: Duration,
    /// Idle peers are pinged this often (WANMPI_WAMP_KEEPALIVE_MS, 5 s).
    pub keepalive: Duration,
    /// Test hook: drop this fraction of our outgoing datagrams, seeded
    /// (WANMPI_WAMP_DROP_RATE, WANMPI_WAMP_DROP_SEED).
    pub drop_rate: f64,
    pub drop_seed: u64,
    /// Print counters at shutdown (WANMPI_WAMP_STATS=1).
    pub print_stats: bool,
    /// Print each connection's sender state every second (WANMPI_WAMP_TRACE=1).
    pub trace: bool,
    /// Ports the UDP socket binds in (the launcher's WANMPI_PORT_RANGE,
    /// `mpirun --port-range`); None: any free port.
    pub port_range: Option<wanmpi_bootstrap::PortRange>,
}

impl Default for WampOptions {
    fn default() -> Self {
        WampOptions {
            publish_addr: IpAddr::from([127, 0, 0, 1]),
            channels: 64,
            packet_size: 0,
            max_frame: 1 << 20,
            window: 16 << 20,
            cc: Mode::Model,
            ack_freq: 0.1,
            ack_every: 2,
            int_ack_timeout: Duration::from_millis(1),
            xmt_timeout: Duration::from_millis(50),
            overflow_timeout: Duration::from_millis(1),
            uninterrupted: true,
            initial_window: 128,
            encrypt: true,
            fec: Fec::Auto,
            gso: true,
            udp_buf: 4 << 20,
            setup_timeout: Duration::from_secs(60),
            punch_timeout: Duration::from_secs(6),
            peer_timeout: wanmpi_transport::outage::DEFAULT,
            keepalive: Duration::from_secs(5),
            drop_rate: 0.0,
            drop_seed: 0,
            print_stats: false,
            trace: false,
            port_range: None,
        }
    }
}

fn bad(name: &str, v: &str, why: &str) -> TransportError {
    TransportError::Setup(format!("WANMPI_WAMP_{name}={v:?}: {why}"))
}

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, TransportError> {
    v.trim().parse().map_err(|_| bad(name, v, "not a valid number"))
}

fn millis(name: &str, v: &str) -> Result<Duration, TransportError> {
    Ok(Duration::from_millis(num(name, v)?))
}

impl WampOptions {
    pub fn from_env() -> Result<WampOptions, TransportError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Defaults overridden by `lookup("WANMPI_WAMP_<NAME>")`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<WampOptions, TransportError> {
        let mut o = WampOptions::default();
        if let Some(v) = lookup(wanmpi_transport::outage::ENV) {
            o.peer_timeout = wanmpi_transport::outage::parse(&v).map_err(TransportError::Setup)?;
        }
        let get = |name: &str| lookup(&format!("WANMPI_WAMP_{name}"));
        if let Some(v) = get("PUBLISH_ADDR") {
            o.publish_addr = v.trim().parse().map_err(|_| bad("PUBLISH_ADDR", &v, "not an IP address"))?;
        }
        if let Some(v) = get("CHANNELS") {
            o.channels = num("CHANNELS", &v)?;
        }
        if let Some(v) = get("PACKETSIZE") {
            o.packet_size = if v.trim() == "auto" { 0 } else { num("PACKETSIZE", &v)? };
        }
        if let Some(v) = get("MAX_FRAME") {
            o.max_frame = num("MAX_FRAME", &v)?;
        }
        if let Some(v) = get("WINDOW") {
            o.window = num("WINDOW", &v)?;
        }
        if let Some(v) = get("CC") {
            o.cc = match v.trim() {
                "model" | "bbr" | "default" => Mode::Model,
                "paper" => Mode::Paper,
                _ => return Err(bad("CC", &v, "expected model or paper")),
            };
        }
        if let Some(v) = get("ACK_FREQ") {
            o.ack_freq = num("ACK_FREQ", &v)?;
        }
        if let Some(v) = get("ACK_EVERY") {
            o.ack_every = num("ACK_EVERY", &v)?;
        }
        if let Some(v) = get("INT_ACK_TIMEOUT") {
            o.int_ack_timeout = millis("INT_ACK_TIMEOUT", &v)?;
        }
        if let Some(v) = get("XMT_TIMEOUT") {
            o.xmt_timeout = millis("XMT_TIMEOUT", &v)?;
        }
        if let Some(v) = get("OVERFLOW_TIMEOUT") {
            o.overflow_timeout = millis("OVERFLOW_TIMEOUT", &v)?;
        }
        if let Some(v) = get("UNINTERRUPTED") {
            o.uninterrupted = num::<u8>("UNINTERRUPTED", &v)? != 0;
        }
        if let Some(v) = get("INITIAL_WINDOW") {
            o.initial_window = num("INITIAL_WINDOW", &v)?;
        }
        if let Some(v) = get("ENCRYPT") {
            o.encrypt = num::<u8>("ENCRYPT", &v)? != 0;
        }
        if let Some(v) = get("FEC") {
            o.fec = parse_fec(&v).ok_or_else(|| bad("FEC", &v, "expected auto, off or K:M (e.g. 16:2)"))?;
        }
        if let Some(v) = get("GSO") {
            o.gso = num::<u8>("GSO", &v)? != 0;
        }
        if let Some(v) = get("UDP_BUF") {
            o.udp_buf = num("UDP_BUF", &v)?;
        }
        if let Some(v) = get("SETUP_TIMEOUT_MS") {
            o.setup_timeout = millis("SETUP_TIMEOUT_MS", &v)?;
        }
        if let Some(v) = get("PUNCH_TIMEOUT_MS") {
            o.punch_timeout = millis("PUNCH_TIMEOUT_MS", &v)?;
        }
        if let Some(v) = get("PEER_TIMEOUT_MS") {
            o.peer_timeout = millis("PEER_TIMEOUT_MS", &v)?;
        }
        if let Some(v) = get("KEEPALIVE_MS") {
            o.keepalive = millis("KEEPALIVE_MS", &v)?;
        }
        if let Some(v) = get("DROP_RATE") {
            o.drop_rate = num("DROP_RATE", &v)?;
        }
        if let Some(v) = get("DROP_SEED") {
            o.drop_seed = num("DROP_SEED", &v)?;
        }
        if let Some(v) = get("STATS") {
            o.print_stats = v.trim() == "1";
        }
        if let Some(v) = get("TRACE") {
            o.trace = v.trim() == "1";
        }
        o.port_range = wanmpi_bootstrap::PortRange::from_lookup(&lookup).map_err(TransportError::Setup)?;
        o.validate()?;
        Ok(o)
    }

    pub fn validate(&self) -> Result<(), TransportError> {
        let fail = |name: &str, v: String, why: &str| Err(bad(name, &v, why));
        if self.channels == 0 {
            return fail("CHANNELS", "0".into(), "at least 1");
        }
        if self.packet_size != 0 && !(576..=65_000).contains(&self.packet_size) {
            return fail("PACKETSIZE", self.packet_size.to_string(), "between 576 and 65000 (or auto)");
        }
        if self.max_frame < 1024 || self.max_frame > (64 << 20) {
            return fail("MAX_FRAME", self.max_frame.to_string(), "between 1 KiB and 64 MiB");
        }
        if self.window < self.max_frame as u64 {
            return fail("WINDOW", self.window.to_string(), "at least MAX_FRAME");
        }
        if !(self.ack_freq > 0.0 && self.ack_freq <= 1.0) {
            return fail("ACK_FREQ", self.ack_freq.to_string(), "a fraction in (0, 1]");
        }
        if !(0.0..1.0).contains(&self.drop_rate) {
            return fail("DROP_RATE", self.drop_rate.to_string(), "a fraction in [0, 1)");
        }
        if self.initial_window < 2 {
            return fail("INITIAL_WINDOW", self.initial_window.to_string(), "at least 2 packets");
        }
        Ok(())
    }
}

fn parse_fec(v: &str) -> Option<Fec> {
    match v.trim() {
        "auto" => Some(Fec::Auto),
        "off" | "0" => Some(Fec::Off),
        s => {
            let (k, m) = s.split_once(':')?;
            let (k, m): (u8, u8) = (k.parse().ok()?, m.parse().ok()?);
            (k >= 1 && m >= 1 && k as usize + m as usize <= 255).then_some(Fec::Fixed { k, m })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<WampOptions, TransportError> {
        WampOptions::from_lookup(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn a_silent_peer_is_kept_for_the_outage_limit() {
        assert_eq!(with(&[]).unwrap().peer_timeout, Duration::from_secs(600));
        assert_eq!(with(&[("WANMPI_OUTAGE_LIMIT", "90")]).unwrap().peer_timeout, Duration::from_secs(90));
        // wamp's own knob wins over the job's.
        let o = with(&[("WANMPI_OUTAGE_LIMIT", "90"), ("WANMPI_WAMP_PEER_TIMEOUT_MS", "500")]).unwrap();
        assert_eq!(o.peer_timeout, Duration::from_millis(500));
        assert!(with(&[("WANMPI_OUTAGE_LIMIT", "0")]).is_err());
    }

    #[test]
    fn knobs_parse_and_bad_values_name_the_variable() {
        let o =
            with(&[("WANMPI_WAMP_CC", "paper"), ("WANMPI_WAMP_ACK_FREQ", "0.25"), ("WANMPI_WAMP_FEC", "16:2"), ("WANMPI_WAMP_XMT_TIMEOUT", "20")])
                .unwrap();
        assert_eq!(o.cc, Mode::Paper);
        assert_eq!(o.ack_freq, 0.25);
        assert_eq!(o.fec, Fec::Fixed { k: 16, m: 2 });
        assert_eq!(o.xmt_timeout, Duration::from_millis(20));
        for (k, v) in [
            ("WANMPI_WAMP_CC", "fast"),
            ("WANMPI_WAMP_ACK_FREQ", "2"),
            ("WANMPI_WAMP_FEC", "0:3"),
            ("WANMPI_WAMP_PACKETSIZE", "100"),
            ("WANMPI_WAMP_CHANNELS", "x"),
        ] {
            let e = with(&[(k, v)]).unwrap_err().to_string();
            assert!(e.contains(&k["WANMPI_WAMP_".len()..]), "{e}");
        }
    }
}
