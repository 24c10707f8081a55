//! `SctpTransport::connect`: socket options, endpoint exchange through the
//! bootstrap key/value service, one association per peer (the lower rank
//! initiates), authentication, and a bounded wait until all of it is done.

use crate::endpoint::{sealed_link, Endpoint};
use crate::error::SctpError;
use crate::link::{DropPlan, Link};
use crate::options::SctpOptions;
use crate::path::{PathTiming, Paths};
use crate::poller::Poller;
use crate::sock::Sock;
use crate::stack::{self, TICK};
use crate::transport::{Peer, SctpTransport};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;
use usrsctp_sys as sys;
use wanmpi_bootstrap::{reflect, KeyValue};
use wanmpi_transport::{Caps, PeerId};

/// Eager limit suggested to the engine (LAM's 64 KiB, as the design says).
const EAGER_LIMIT_HINT: usize = 64 << 10;

fn endpoint_key(rank: PeerId) -> String {
    format!("sctp-ep-{rank}")
}

/// Our local addresses: the given ones, then our address in each of
/// `path_nets` (an error if we have none there, since paths pair by index).
fn resolve_addrs(opts: &SctpOptions) -> Result<Vec<IpAddr>, SctpError> {
    let mut addrs = opts.local_addrs();
    if opts.path_nets.is_empty() {
        return Ok(addrs);
    }
    let mine = crate::netif::local_addrs()?;
    for &(net, len) in &opts.path_nets {
        let found = mine.iter().copied().find(|&a| crate::netif::in_net(a, net, len) && !addrs.contains(&a));
        let a = found.ok_or_else(|| SctpError::BadOption {
            var: "WANMPI_SCTP_PATH_NETS".into(),
            problem: format!("this host has no address in {net}/{len} (got {mine:?})"),
        })?;
        addrs.push(a);
    }
    Ok(addrs)
}

fn set_udp_buffers(udp: &UdpSocket, bytes: u32) {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: setsockopt on our own fd with an int; failure only means
        // the kernel keeps its default, which the docs mention.
        unsafe {
            libc::setsockopt(udp.as_raw_fd(), libc::SOL_SOCKET, opt, (&v as *const libc::c_int).cast(), 4);
        }
    }
}

impl SctpTransport {
    /// Sets up this rank's transport: publishes its endpoint under
    /// `sctp-ep-<rank>`, fences, associates with every other rank and waits
    /// (at most `opts.connect_timeout`) until every peer proved `secret`.
    pub fn connect(kv: &mut dyn KeyValue, secret: [u8; 32], opts: SctpOptions) -> Result<SctpTransport, SctpError> {
        opts.validate()?;
        let (rank, size) = (kv.rank(), kv.size());
        let stack_user = stack::acquire(&opts)?;
        let port = stack_user.port;
        let mut udps = vec![];
        // What peers are told: each address with its socket's port, even
        // where the socket is on the wildcard (an address on no interface).
        let mut published = vec![];
        let mut wildcard = false;
        for addr in resolve_addrs(&opts)? {
            let (udp, wild) = reflect::bind_udp(addr, opts.port_range)?;
            wildcard |= wild;
            udp.set_nonblocking(true)?;
            set_udp_buffers(&udp, opts.udp_buf);
            published.push(SocketAddr::new(addr, udp.local_addr()?.port()));
            udps.push(Arc::new(udp));
        }
        // The primary path's reflexive address, if a NAT is between us and
        // the job's reflector.
        let mut reflexive = match (udps.first(), published.first()) {
            (Some(u), Some(p)) => reflect::udp_candidates(u, p.ip(), kv.reflector(), &secret, rank)
                .map_err(|e| SctpError::Io(std::io::Error::other(e.to_string())))?
                .split_off(1),
            _ => vec![],
        };
        // Behind NAT: our own addresses too, for peers behind the same one.
        if let (true, Some(&p)) = (wildcard || !reflexive.is_empty(), published.first()) {
            let mut all = vec![p];
            all.append(&mut reflexive);
            reflect::add_host_candidates(&mut all, p.port());
            reflexive = all.split_off(1);
        }
        let poller = Poller::new(&udps.iter().map(|u| u.as_raw_fd()).collect::<Vec<_>>())?;
        let sock = Sock::new()?;
        let mut t = SctpTransport {
            rank,
            size,
            caps: Caps { name: "sctp", channels: opts.streams, max_frame: opts.max_frame, eager_limit_hint: EAGER_LIMIT_HINT, reliable: true },
            secret,
            udps,
            poller,
            peers: (0..size).map(|_| None).collect(),
            by_udp: HashMap::new(),
            multipath: false,
            stray_probes: 0,
            probe_buf: vec![],
            by_assoc: HashMap::new(),
            events: VecDeque::new(),
            reasm: HashMap::new(),
            notif: vec![],
            rbuf: vec![0; 256 << 10],
            ubuf: vec![0; crate::pump::BATCH * crate::pump::DATAGRAM_MAX],
            sbuf: vec![],
            streams: vec![vec![Default::default(); opts.streams as usize]; size as usize],
            shutting_down: false,
            signalled: false,
            must_read: true,
            sock: Some(sock),
            stack: Some(stack_user),
            opts,
        };
        t.configure_socket()?;
        t.sock.as_ref().map(|s| s.bind(port)).transpose()?;

        let mut salt = [0u8; crate::seal::SALT_LEN];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut salt);
        let nat_here = wildcard || !reflexive.is_empty();
        let mine = Endpoint { udps: published, sctp_port: port, seal: t.opts.seal, salt, cands: reflexive };
        kv.put(&endpoint_key(rank), &mine.format())?;
        kv.fence()?;
        let others: Vec<u32> = (0..size).filter(|&r| r != rank).collect();
        let mut punch = false;
        let eps = kv.get_many(&others.iter().map(|&r| endpoint_key(r)).collect::<Vec<_>>())?;
        for (r, ep) in others.into_iter().zip(eps) {
            let theirs = Endpoint::parse(r, &ep)?;
            let (addrs, sctp_port) = (theirs.udps.clone(), theirs.sctp_port);
            // Keys before the first packet: no INIT ever travels unsealed.
            let sealed = sealed_link(&t.opts.maps, rank, &mine, r, &theirs);
            let (sealer, opener) = match sealed {
                true => {
                    let (s, o) = crate::seal::derive(&t.secret, rank, &mine.salt, r, &theirs.salt);
                    (Some(s), Some(o))
                }
                false => (None, None),
            };
            let token = stack::new_token();
            let o = &t.opts;
            let drops = DropPlan {
                rate: o.drop_rate,
                seed: o.drop_seed,
                first_data: o.drop_first_data,
                chunks: o.drop_chunks.clone(),
                data_nth: o.drop_data_nth.clone(),
                end_nth: o.drop_end_nth.clone(),
            };
            // Path i: our address i to the peer's address i.
            let pairs: Vec<_> = t.udps.iter().cloned().zip(addrs.iter().copied()).collect();
            let npaths = pairs.len();
            let mut link = Link::new(token, r, pairs, o.checksum, drops, o.fault_cut_path, sealer);
            link.set_tamper(o.test_tamper);
            let link = Arc::new(link);
            stack::register_link(link.clone());
            // SAFETY: the token is an integer address usrsctp only compares.
            unsafe { sys::usrsctp_register_address(token as *mut libc::c_void) };
            for (i, &a) in addrs.iter().enumerate() {
                t.by_udp.insert(a, (r, i));
            }
            let paths = (npaths > 1).then(|| {
                let timing = PathTiming {
                    interval: o.probe_interval,
                    fail: o.path_fail,
                    return_to_primary: o.return_to_primary,
                    copy_when_suspected: o.copy_when_suspected,
                };
                Paths::new(npaths, timing, Instant::now())
            });
            t.multipath |= paths.is_some();
            let udp_payload = match t.opts.path_mtu {
                // Every path must carry the association's packets.
                0 => {
                    let locals: Vec<_> = t.udps.iter().filter_map(|u| u.local_addr().ok()).map(|a| a.ip()).collect();
                    (0..npaths).map(|i| crate::mtu::auto_path_mtu(locals[i], addrs[i])).min().unwrap_or(1280)
                }
                m => m,
            };
            // A sealed datagram carries a packet number and a tag around
            // the SCTP packet, and must still fit the path.
            let mtu = if sealed { udp_payload.saturating_sub(crate::seal::OVERHEAD as u32) } else { udp_payload };
            let mut peer = Peer::new(link, paths, sctp_port, mtu, opener);
            peer.cands = theirs.udps.iter().take(1).chain(&theirs.cands).copied().collect();
            // Punched only where a NAT is in play and the link is sealed
            // (only a sealed datagram proves where a peer is).
            punch |= (nat_here || !theirs.cands.is_empty()) && sealed;
            t.peers[r as usize] = Some(peer);
        }
        t.set_default_mtu()?;
        // Every rank knows every link before the first INIT flies, so no
        // INIT is ignored as coming from an unknown source.
        kv.fence()?;
        if punch {
            t.punch(nat_here, &mine)?;
        }
        for p in t.peers.iter().skip(rank as usize + 1).flatten() {
            t.sock.as_ref().ok_or_else(|| SctpError::GlobalConflict("socket closed".into()))?.connect(p.link.token, p.sctp_port)?;
        }
        t.await_peers()?;
        for p in t.peers.iter().flatten() {
            p.link.start_dropping();
        }
        if t.opts.print_stats {
            let which = |want: bool| (0..size).filter(|&r| t.sealed(r) == Some(want)).collect::<Vec<_>>();
            eprintln!("wanmpi sctp: rank {rank}: sealed (AES-128-GCM) to ranks {:?}, plain to ranks {:?}", which(true), which(false));
        }
        Ok(t)
    }

    /// Hole punching before any association: a sealed probe to every
    /// candidate of each sealed peer behind a NAT (or every sealed peer
    /// when we are behind one), every `PUNCH_EVERY`, until a datagram of
    /// the peer opened (pump.rs `adopt` then points the link at its
    /// source, and answers each probe so the peer hears us too). Both
    /// sides send, so two masquerading NATs each see traffic out before
    /// traffic in. A peer unheard after `punch_timeout` has no path.
    fn punch(&mut self, nat_here: bool, mine: &Endpoint) -> Result<(), SctpError> {
        const PUNCH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);
        let start = Instant::now();
        let mut next = start;
        let wanted = |p: &Peer| p.opener.is_some() && (nat_here || p.cands.len() > 1);
        loop {
            self.pump().map_err(|e| SctpError::Io(std::io::Error::other(e.to_string())))?;
            let unheard: Vec<PeerId> = (0..self.size).filter(|&r| self.peers[r as usize].as_ref().is_some_and(|p| wanted(p) && !p.heard)).collect();
            if unheard.is_empty() {
                return Ok(());
            }
            let now = Instant::now();
            if now >= start + self.opts.punch_timeout {
                let tried: Vec<String> = unheard
                    .iter()
                    .filter_map(|&r| Some(format!("rank {r} at {}", reflect::format_candidates(&self.peers[r as usize].as_ref()?.cands))))
                    .collect();
                let own: Vec<SocketAddr> = mine.udps.iter().take(1).chain(&mine.cands).copied().collect();
                return Err(SctpError::NoPath {
                    rank: self.rank,
                    unheard,
                    secs: now.duration_since(start).as_secs_f64(),
                    tried: tried.join("; "),
                    own: reflect::format_candidates(&own),
                });
            }
            if now >= next {
                next = now + PUNCH_EVERY;
                let probe = crate::path::Probe { kind: crate::path::ProbeKind::Probe, path: 0, seq: 0, stamp_us: 0 }.encode();
                for &r in &unheard {
                    let Some(p) = self.peers[r as usize].as_ref() else { continue };
                    for &c in &p.cands {
                        p.link.send_glue_to(0, &probe, Some(c));
                    }
                }
            }
            self.poller.wait(next.saturating_duration_since(Instant::now()).min(TICK))?;
        }
    }

    fn await_peers(&mut self) -> Result<(), SctpError> {
        let start = Instant::now();
        loop {
            self.pump().map_err(|e| SctpError::Io(std::io::Error::other(e.to_string())))?;
            let mut missing = vec![];
            let withhold = self.opts.test_withhold_proof;
            for (r, p) in self.peers.iter().enumerate() {
                let Some(p) = p else { continue };
                // A peer that finished setup and then shut down (it may be
                // quicker than us and already done) is not a setup failure;
                // its loss stays queued for poll_recv. Nor is one we
                // rejected (a wrong proof, too much before the proof): that
                // ends only its own association, reported the same way, so
                // a stranger at one peer's address cannot stop the others'
                // setup and the runtime decides what a lost rank means.
                let sent = !p.hello_pending && p.proof_pending.is_none() && !p.accept_pending;
                if (p.verified && p.accepted && sent) || p.rejected || (withhold && p.assoc.is_some() && !p.hello_pending) {
                    continue;
                }
                if let Some(reason) = &p.lost {
                    return Err(SctpError::SetupPeerLost { peer: r as PeerId, reason: reason.clone() });
                }
                missing.push(r as PeerId);
            }
            if missing.is_empty() {
                return Ok(());
            }
            let elapsed = start.elapsed();
            if elapsed >= self.opts.connect_timeout {
                return Err(SctpError::SetupTimeout { secs: elapsed.as_secs_f64(), missing });
            }
            self.poller.wait((self.opts.connect_timeout - elapsed).min(TICK))?;
        }
    }

    /// Socket-wide options; they apply to every future association.
    fn configure_socket(&self) -> Result<(), SctpError> {
        let o = &self.opts;
        let s = self.sock.as_ref().ok_or_else(|| SctpError::GlobalConflict("socket closed".into()))?;
        let future = sys::SCTP_FUTURE_ASSOC;
        s.set(libc::SOL_SOCKET, libc::SO_SNDBUF, &(o.sndbuf as libc::c_int), "SO_SNDBUF")?;
        s.set(libc::SOL_SOCKET, libc::SO_RCVBUF, &(o.rcvbuf as libc::c_int), "SO_RCVBUF")?;
        s.set_sctp(sys::SCTP_NODELAY, &(o.nodelay as libc::c_int), "SCTP_NODELAY")?;
        let init = sys::sctp_initmsg {
            sinit_num_ostreams: o.streams,
            sinit_max_instreams: o.streams,
            sinit_max_attempts: o.max_retrans,
            sinit_max_init_timeo: 0,
        };
        s.set_sctp(sys::SCTP_INITMSG, &init, "SCTP_INITMSG")?;
        let rto = sys::sctp_rtoinfo { srto_assoc_id: future, srto_initial: o.rto_initial_ms, srto_max: o.rto_max_ms, srto_min: o.rto_min_ms };
        s.set_sctp(sys::SCTP_RTOINFO, &rto, "SCTP_RTOINFO")?;
        let assoc = sys::sctp_assocparams { sasoc_assoc_id: future, sasoc_asocmaxrxt: o.assoc_max_retrans(), ..Default::default() };
        s.set_sctp(sys::SCTP_ASSOCINFO, &assoc, "SCTP_ASSOCINFO")?;
        let sack = sys::sctp_sack_info { sack_assoc_id: future, sack_delay: o.sack_delay_ms, sack_freq: o.sack_freq };
        s.set_sctp(sys::SCTP_DELAYED_SACK, &sack, "SCTP_DELAYED_SACK")?;
        let burst = sys::sctp_assoc_value { assoc_id: future, assoc_value: o.max_burst };
        s.set_sctp(sys::SCTP_MAX_BURST, &burst, "SCTP_MAX_BURST")?;
        let cc = sys::sctp_assoc_value { assoc_id: future, assoc_value: o.cc.module() };
        s.set_sctp(sys::SCTP_PLUGGABLE_CC, &cc, "SCTP_PLUGGABLE_CC")?;
        // Pieces of large messages on different streams may interleave, so
        // one big message does not hold back the other streams.
        s.set_sctp(sys::SCTP_FRAGMENT_INTERLEAVE, &2u32, "SCTP_FRAGMENT_INTERLEAVE")?;
        s.set_sctp(sys::SCTP_RECVRCVINFO, &1 as &libc::c_int, "SCTP_RECVRCVINFO")?;
        for ty in [sys::SCTP_ASSOC_CHANGE, sys::SCTP_SHUTDOWN_EVENT, sys::SCTP_SEND_FAILED_EVENT, sys::SCTP_PARTIAL_DELIVERY_EVENT] {
            let ev = sys::sctp_event { se_assoc_id: future, se_type: ty, se_on: 1 };
            s.set_sctp(sys::SCTP_EVENT, &ev, "SCTP_EVENT")?;
        }
        Ok(())
    }

    /// The MTU new associations start with (usrsctp's AF_CONN default is
    /// 1280). It must be set before they exist: setting a larger MTU on a
    /// live association raises the path's MTU but not the association's
    /// fragmentation point (measured: 1280-byte packets on the wire with
    /// 1452 configured), so it is the smallest of all peers' MTUs here and
    /// each association's own MTU, if larger, only applies to bundling.
    fn set_default_mtu(&self) -> Result<(), SctpError> {
        let Some(mtu) = self.peers.iter().flatten().map(|p| p.mtu).min() else { return Ok(()) };
        let s = self.sock.as_ref().ok_or_else(|| SctpError::GlobalConflict("socket closed".into()))?;
        let p =
            sys::sctp_paddrparams { spp_assoc_id: sys::SCTP_FUTURE_ASSOC, spp_pathmtu: mtu, spp_flags: sys::SPP_PMTUD_DISABLE, ..Default::default() };
        s.set_sctp(sys::SCTP_PEER_ADDR_PARAMS, &p, "SCTP_PEER_ADDR_PARAMS (default MTU)")
    }

    /// Per-association parameters that AF_CONN does not take from the
    /// socket defaults: path MTU (usrsctp starts AF_CONN at 1280),
    /// heartbeats and the path retransmission limit.
    pub(crate) fn configure_association(&self, rank: PeerId, assoc: u32) {
        let (Some(s), Some(Some(peer))) = (self.sock.as_ref(), self.peers.get(rank as usize)) else { return };
        let o = &self.opts;
        let hb = if o.heartbeat_ms > 0 { sys::SPP_HB_ENABLE } else { sys::SPP_HB_DISABLE };
        let mut p = sys::sctp_paddrparams {
            spp_assoc_id: assoc,
            spp_hbinterval: o.heartbeat_ms,
            spp_pathmtu: peer.mtu,
            spp_flags: hb | sys::SPP_PMTUD_DISABLE,
            // usrsctp sees one path per association (the glue does the
            // multihoming): an unreachable path is only heartbeated, every
            // HB_INTERVAL, so after an outage it resumed seconds late.
            spp_pathmaxrxt: o.assoc_max_retrans(),
            ..Default::default()
        };
        // usrsctp wants the path's own address (EAFNOSUPPORT for an empty one).
        let conn = crate::sock::conn_addr(peer.link.token, peer.sctp_port);
        // SAFETY: sockaddr_conn (16 bytes) fits in sockaddr_storage (128).
        unsafe { std::ptr::write_unaligned((&mut p.spp_address as *mut libc::sockaddr_storage).cast::<sys::sockaddr_conn>(), conn) };
        // A refusal leaves usrsctp's defaults, which still work; counters()
        // shows the MTU in use and the tests check heartbeats.
        let _ = s.set_sctp(sys::SCTP_PEER_ADDR_PARAMS, &p, "SCTP_PEER_ADDR_PARAMS");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_nets_take_this_hosts_address_in_each_network() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let o = SctpOptions { publish_addr: ip("127.0.0.2"), path_nets: vec![(ip("127.0.0.0"), 8)], ..Default::default() };
        assert_eq!(resolve_addrs(&o).unwrap(), vec![ip("127.0.0.2"), ip("127.0.0.1")]);
        // A documentation network this host is not on: a named error, not
        // a silent single path.
        let mine = crate::netif::local_addrs().unwrap();
        let absent = ["198.51.100.0", "203.0.113.0", "192.0.2.0"]
            .into_iter()
            .find(|n| !mine.iter().any(|&a| crate::netif::in_net(a, ip(n), 24)))
            .expect("some TEST-NET is not configured here");
        let o = SctpOptions { path_nets: vec![(ip(absent), 24)], ..Default::default() };
        let e = resolve_addrs(&o).unwrap_err().to_string();
        assert!(e.contains("PATH_NETS") && e.contains(&format!("{absent}/24")), "{e}");
        assert_eq!(resolve_addrs(&SctpOptions::default()).unwrap(), vec![ip("127.0.0.1")]);
    }
}
