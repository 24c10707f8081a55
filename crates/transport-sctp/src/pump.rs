//! The receive pump: advance usrsctp's timers, feed it every datagram that
//! waits in the UDP socket, then take everything it has for us (messages,
//! pieces of messages, notifications) until it says EWOULDBLOCK.

use crate::auth::{self, Hellos, Message, HANDSHAKE_ALLOWANCE, HELLO_LEN};
use crate::notify::{self, Notification};
use crate::path::{self, Probe, ProbeKind};
use crate::stack;
use crate::transport::{Event, Peer, SctpTransport};
use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;
use usrsctp_sys as sys;
use wanmpi_transport::{PeerId, TransportError};

/// Datagrams read per pump at most, so one busy peer cannot starve the rest
/// of the progress loop; the next pump continues.
const MAX_DATAGRAMS_PER_PUMP: usize = 4096;
/// Datagrams taken per recvmmsg.
pub(crate) const BATCH: usize = 8;
/// Room for one datagram in the receive buffer (`ubuf` holds BATCH).
pub(crate) const DATAGRAM_MAX: usize = 64 << 10;

impl SctpTransport {
    /// One progress step. Returns the number of datagrams fed to usrsctp.
    pub(crate) fn pump(&mut self) -> Result<usize, TransportError> {
        if self.stack.is_none() {
            // Closed: usrsctp may be finished; poll_recv only hands out
            // what was queued before.
            return Ok(0);
        }
        // A busy progress loop pumps constantly; the syscalls it does not
        // need cost small-message latency (profiled: reading the timerfd
        // and an empty usrsctp_recvv on every pump).
        let now = Instant::now();
        let periodic = self.poller.clear_tick(now);
        let timers_ran = stack::tick();
        let mut n = 0;
        for i in 0..self.udps.len() {
            n += self.read_udp(i)?;
        }
        if self.multipath {
            self.run_paths(now);
        }
        // Only input and timers make something readable in usrsctp. Timers
        // are process-wide (another transport's tick may have run ours), so
        // read at least once a tick as well.
        if n > 0 || timers_ran || periodic || self.must_read {
            self.must_read = false;
            self.read_sctp()?;
        }
        self.send_control();
        Ok(n)
    }

    /// Reads the UDP socket of local address `local`, up to `BATCH`
    /// datagrams per `recvmmsg`. A batch that comes back short drained the
    /// socket: no further call just to hear EAGAIN (before: one
    /// `recvfrom` per datagram plus an EAGAIN on every pump).
    fn read_udp(&mut self, local: usize) -> Result<usize, TransportError> {
        let fd = self.udps[local].as_raw_fd();
        let mut n = 0;
        while n < MAX_DATAGRAMS_PER_PUMP {
            let mut got = [(0usize, None::<SocketAddr>); BATCH];
            let r = recv_batch(fd, &mut self.ubuf, &mut got);
            let count = match r {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::ConnectionRefused) => continue,
                Err(e) => return Err(e.into()),
            };
            n += count;
            for (i, &(len, src)) in got[..count].iter().enumerate() {
                // Datagrams from anyone but a peer's known address are
                // ignored, unless sealed by a peer and newer than all it
                // sent: then the peer is there now (a NAT's mapping for it,
                // found by hole punching or changed by a rebinding).
                let known = src.as_ref().and_then(|a| self.by_udp.get(a)).copied();
                let at = i * DATAGRAM_MAX..i * DATAGRAM_MAX + len;
                let Some((rank, remote)) = known.or_else(|| src.and_then(|a| self.adopt(local, a, at.clone()))) else {
                    if path::is_glue(&self.ubuf[at]) {
                        self.stray_probes += 1;
                    }
                    continue;
                };
                let packet = &mut self.ubuf[at];
                let Some(Some(peer)) = self.peers.get_mut(rank as usize) else { continue };
                if !peer.link.arrived_on(remote, len) {
                    continue; // fault-injection cut
                }
                peer.link.count_input(len);
                // A sealed link's datagrams open here or go no further: a
                // forged, altered or replayed one never reaches usrsctp.
                let packet = match peer.opener.as_mut() {
                    None => packet,
                    Some(o) => match o.open(packet) {
                        Ok(plain) => plain,
                        Err(why) => {
                            peer.refused(why);
                            continue;
                        }
                    },
                };
                peer.heard = true;
                if path::is_glue(packet) {
                    // Ours, never usrsctp's: a probe, an ack, or garbage.
                    on_glue(peer, local, remote, packet);
                    continue;
                }
                if peer.link.accept_input(packet) {
                    // SAFETY: the token is registered; usrsctp copies the packet.
                    unsafe { sys::usrsctp_conninput(peer.link.token as *mut libc::c_void, packet.as_ptr().cast(), packet.len(), 0) };
                }
            }
            if count < BATCH {
                break;
            }
        }
        Ok(n)
    }

    /// The peer whose sealed datagram `packet` is, arrived on our socket
    /// `local` from `from`, an address no peer used: its path `local` now
    /// goes to `from`. Only a sealed datagram newer than any the peer sent
    /// moves it (`Opener::proves_newest`); a plain link never moves.
    fn adopt(&mut self, local: usize, from: SocketAddr, at: std::ops::Range<usize>) -> Option<(PeerId, usize)> {
        let packet = &self.ubuf[at];
        let rank = self.peers.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| !p.closed && !p.rejected && local < p.link.paths.len() && p.opener.as_ref().is_some_and(|o| o.proves_newest(packet)))
        })?;
        let peer = self.peers[rank].as_mut()?;
        let path = &peer.link.paths[local];
        let old = path.dest();
        path.set_dest(from);
        if peer.heard {
            peer.rebinds += 1;
        }
        self.by_udp.remove(&old);
        self.by_udp.insert(from, (rank as PeerId, local));
        Some((rank as PeerId, local))
    }

    /// Path failover: marks dead paths, switches the active path, sends the
    /// probes that are due. Only runs when some peer has several paths.
    fn run_paths(&mut self, now: Instant) {
        let mut due = std::mem::take(&mut self.probe_buf);
        for p in self.peers.iter_mut().flatten() {
            let Some(paths) = p.paths.as_mut() else { continue };
            if p.closed || p.lost.is_some() {
                continue;
            }
            if let Some(active) = paths.check(now) {
                p.link.set_active(active);
            }
            p.link.set_backup(paths.backup(now));
            due.clear();
            paths.due_probes(now, &mut due);
            for (i, probe) in &due {
                p.link.send_glue(*i, &probe.encode());
            }
        }
        due.clear();
        self.probe_buf = due;
    }

    fn read_sctp(&mut self) -> Result<(), TransportError> {
        loop {
            let Some(sock) = self.sock.as_ref() else { return Ok(()) };
            let Some(r) = sock.recv(&mut self.rbuf)? else { return Ok(()) };
            if r.notification {
                self.notif.extend_from_slice(&self.rbuf[..r.len]);
                if r.eor {
                    let bytes = std::mem::take(&mut self.notif);
                    if let Some(n) = notify::parse(&bytes) {
                        self.on_notification(n);
                    }
                }
                continue;
            }
            // Without rcvinfo a piece cannot be attributed; usrsctp always
            // gives it since SCTP_RECVRCVINFO is on.
            let Some(info) = r.info else { continue };
            let assoc = info.rcv_assoc_id;
            let key = (assoc, info.rcv_sid);
            // Nothing is kept for an association that is no peer's, or one
            // we rejected: no one to deliver it to.
            let Some(rank) = self.rank_of(assoc).filter(|&rank| !self.peer(rank).is_ok_and(|p| p.rejected)) else {
                self.reasm.remove(&key);
                continue;
            };
            let held = self.reasm.get(&key).map_or(0, Vec::len);
            if let Err(why) = self.may_hold(rank, assoc, held, r.len, r.eor) {
                self.reject(rank, assoc, &why);
                continue;
            }
            let piece = &self.rbuf[..r.len];
            let msg = match (self.reasm.get_mut(&key), r.eor) {
                (None, true) => piece.to_vec(),
                (Some(buf), true) => {
                    buf.extend_from_slice(piece);
                    self.reasm.remove(&key).unwrap_or_default()
                }
                (Some(buf), false) => {
                    buf.extend_from_slice(piece);
                    continue;
                }
                (None, false) => {
                    self.reasm.insert(key, piece.to_vec());
                    continue;
                }
            };
            self.on_message(info.rcv_assoc_id, info.rcv_sid, info.rcv_ppid, msg);
        }
    }

    /// Whether `rank` may add a `piece` (the `last` one or not) to the
    /// `held` bytes of an unfinished message on association `assoc`: a peer that proved the secret up to the frame
    /// limit (no rank of the job sends more, try_send refuses it); one that
    /// has not, only what is left of the handshake allowance, counting
    /// everything it sent and every unfinished piece of it.
    fn may_hold(&mut self, rank: PeerId, assoc: u32, held: usize, piece: usize, last: bool) -> Result<(), String> {
        let max = self.caps.max_frame;
        let pieces: usize = self.reasm.iter().filter(|((a, _), _)| *a == assoc).map(|(_, b)| b.len()).sum();
        let Some(Some(p)) = self.peers.get_mut(rank as usize) else { return Ok(()) };
        if p.verified {
            return match held + piece > max {
                true => Err(format!("sent a message of more than {max} bytes, the frame limit")),
                false => Ok(()),
            };
        }
        // `pieces` already holds this message's earlier pieces.
        if p.pre_auth_bytes + pieces + piece > HANDSHAKE_ALLOWANCE {
            return Err(format!("sent more than {HANDSHAKE_ALLOWANCE} bytes before proving the job secret"));
        }
        if !last {
            // Kept in `reasm` until the message's end comes.
            p.pre_auth_peak = p.pre_auth_peak.max(p.held_frames() + pieces + piece);
        }
        Ok(())
    }

    /// The rank behind an association, learning it from the peer's AF_CONN
    /// address the first time.
    fn rank_of(&mut self, assoc: u32) -> Option<PeerId> {
        if let Some(&r) = self.by_assoc.get(&assoc) {
            return Some(r);
        }
        let token = self.sock.as_ref()?.peer_token(assoc)?;
        let rank = self.peers.iter().position(|p| p.as_ref().is_some_and(|p| p.link.token == token))? as PeerId;
        self.by_assoc.insert(assoc, rank);
        Some(rank)
    }

    fn on_notification(&mut self, n: Notification) {
        match n {
            Notification::AssocChange { state, error, assoc } => {
                let Some(rank) = self.rank_of(assoc) else { return };
                match state {
                    sys::SCTP_COMM_UP => self.on_comm_up(rank, assoc),
                    sys::SCTP_RESTART => self.lose(rank, "the peer restarted its association".into()),
                    sys::SCTP_COMM_LOST => {
                        self.close_peer(rank);
                        let limit = wanmpi_transport::outage::describe(self.opts.outage_limit);
                        self.lose(
                            rank,
                            format!(
                                "no answer from rank {rank} for about {limit}: the path was silent past the outage limit (mpirun --outage-limit, WANMPI_OUTAGE_LIMIT; association lost, error {error})"
                            ),
                        );
                    }
                    sys::SCTP_CANT_STR_ASSOC => {
                        self.close_peer(rank);
                        self.lose(rank, "could not start the association".into());
                    }
                    sys::SCTP_SHUTDOWN_COMP => {
                        self.close_peer(rank);
                        if !self.shutting_down {
                            self.lose(rank, "the peer shut down its association".into());
                        }
                    }
                    _ => {}
                }
            }
            Notification::Shutdown { assoc } => {
                if let Some(rank) = self.rank_of(assoc) {
                    if !self.shutting_down {
                        self.lose(rank, "the peer shut down its association".into());
                    }
                }
            }
            Notification::PartialDeliveryAborted { assoc, stream } => {
                self.reasm.remove(&(assoc, stream));
            }
            Notification::SendFailed { .. } | Notification::Other(_) => {}
        }
    }

    fn on_comm_up(&mut self, rank: PeerId, assoc: u32) {
        self.configure_association(rank, assoc);
        if let Some(Some(p)) = self.peers.get_mut(rank as usize) {
            p.assoc = Some(assoc);
            p.closed = false;
            p.hello_pending = true;
        }
    }

    pub(crate) fn close_peer(&mut self, rank: PeerId) {
        if let Some(Some(p)) = self.peers.get_mut(rank as usize) {
            p.closed = true;
        }
    }

    /// Reports `rank` lost once.
    pub(crate) fn lose(&mut self, rank: PeerId, reason: String) {
        if let Some(Some(p)) = self.peers.get_mut(rank as usize) {
            if p.lost.is_none() {
                p.lost = Some(reason.clone());
                self.events.push_back(Event::Lost { peer: rank, reason });
            }
        }
    }

    fn on_message(&mut self, assoc: u32, sid: u16, ppid: u32, msg: Vec<u8>) {
        let Some(rank) = self.rank_of(assoc) else { return };
        let me = self.rank;
        let secret = self.secret;
        let Some(Some(p)) = self.peers.get_mut(rank as usize) else { return };
        if p.rejected {
            return;
        }
        if !p.verified {
            // Everything before the proof counts against the allowance, so
            // a stranger cannot make us hold (or hash) without end.
            p.pre_auth_bytes += msg.len();
            if p.pre_auth_bytes > HANDSHAKE_ALLOWANCE {
                let why = format!("sent more than {HANDSHAKE_ALLOWANCE} bytes before proving the job secret");
                self.reject(rank, assoc, &why);
                return;
            }
        }
        match auth::classify(ppid, &msg) {
            Message::Hello(&theirs) if p.peer_hello.is_none() => {
                p.proof_pending = Some(auth::proof(&secret, &Hellos { challenger: &theirs, prover: &p.hello }, me, rank));
                p.peer_hello = Some(theirs);
            }
            Message::HelloV1 => {
                // Version 1's HELLO (a nonce alone): its PROOF could never
                // check out here, so say why rather than time out.
                let why = "speaks the sctp handshake of version 1, this rank version 2: every rank of a job must run the same wanmpi release";
                self.reject(rank, assoc, why);
            }
            Message::Proof(_) if p.verified => {} // a repeat changes nothing
            Message::Proof(got) => {
                let ok = p
                    .peer_hello
                    .as_ref()
                    .is_some_and(|theirs| auth::verify(&secret, &Hellos { challenger: &p.hello, prover: theirs }, rank, me, got));
                if ok {
                    p.verified = true;
                    p.accept_pending = true;
                    let early = std::mem::take(&mut p.pre_auth);
                    p.pre_auth_bytes = 0;
                    for (sid, bytes) in early {
                        self.deliver(rank, sid, bytes);
                    }
                } else {
                    self.reject(rank, assoc, "failed to prove the job secret");
                }
            }
            Message::Accept => p.accepted = true,
            Message::Frame if p.verified => self.deliver(rank, sid, msg),
            Message::Frame => {
                p.pre_auth.push((sid, msg));
                p.pre_auth_peak = p.pre_auth_peak.max(p.held_frames());
            }
            _ => {} // unknown kinds from a future version, repeated HELLOs: ignored
        }
    }

    /// Hands a frame of a proven peer to the engine. On a sealed link every
    /// packet that carried it was opened (seal.rs), so it is the peer's.
    fn deliver(&mut self, rank: PeerId, sid: u16, bytes: Vec<u8>) {
        if self.peers.get(rank as usize).and_then(Option::as_ref).is_none_or(|p| p.rejected) {
            return;
        }
        if let Some(c) = self.streams.get_mut(rank as usize).and_then(|s| s.get_mut(sid as usize)) {
            c.frames_received += 1;
            c.bytes_received += bytes.len() as u64;
            self.events.push_back(Event::Frame { peer: rank, channel: sid, bytes });
        }
    }

    /// Aborts the association of a peer that failed authentication or
    /// broke a bound, and forgets everything held for it.
    fn reject(&mut self, rank: PeerId, assoc: u32, why: &str) {
        if let Some(sock) = self.sock.as_ref() {
            let _ = sock.send(assoc, 0, 0, sys::SCTP_ABORT, &[]);
        }
        self.reasm.retain(|&(a, _), _| a != assoc);
        if let Some(Some(p)) = self.peers.get_mut(rank as usize) {
            p.pre_auth = vec![];
            p.pre_auth_bytes = 0;
            p.verified = false;
            p.rejected = true;
        }
        self.close_peer(rank);
        self.lose(rank, format!("rank {rank} {why}"));
    }

    /// Sends the HELLOs, PROOFs and ACCEPTs that are due (retried while the
    /// stack says EWOULDBLOCK).
    fn send_control(&mut self) {
        let Some(sock) = self.sock.as_ref() else { return };
        let withhold = self.opts.test_withhold_proof;
        // Version 1's HELLO was the nonce alone (test hook).
        let hello_len = if self.opts.test_hello_v1 { auth::NONCE_LEN } else { HELLO_LEN };
        for p in self.peers.iter_mut().flatten() {
            let Some(assoc) = p.assoc else { continue };
            if p.closed {
                continue;
            }
            if p.hello_pending && sock.send(assoc, 0, auth::PPID_HELLO, 0, &p.hello[..hello_len]).is_ok() {
                p.hello_pending = false;
            }
            // Our HELLO goes first on stream 0; the PROOF and ACCEPT follow it.
            if p.hello_pending {
                continue;
            }
            if let Some(proof) = p.proof_pending.filter(|_| !withhold) {
                if sock.send(assoc, 0, auth::PPID_PROOF, 0, &proof).is_ok() {
                    p.proof_pending = None;
                }
            }
            if p.accept_pending && sock.send(assoc, 0, auth::PPID_ACCEPT, 0, &[1]).is_ok() {
                p.accept_pending = false;
            }
        }
    }
}

/// One non-blocking `recvmmsg` into `buf` (slot i at i x DATAGRAM_MAX):
/// fills `got[i]` with (length, source) and returns the count.
fn recv_batch(fd: RawFd, buf: &mut [u8], got: &mut [(usize, Option<SocketAddr>); BATCH]) -> io::Result<usize> {
    debug_assert!(buf.len() >= BATCH * DATAGRAM_MAX);
    // SAFETY: all-zero is a valid value of these plain C structs.
    let mut addrs: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
    let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..BATCH {
        iovs[i] = libc::iovec { iov_base: buf[i * DATAGRAM_MAX..].as_mut_ptr().cast(), iov_len: DATAGRAM_MAX };
        msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_storage).cast();
        msgs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msgs[i].msg_hdr.msg_iov = &mut iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: every header points at live buffers of the sizes given, all
    // of which outlive the call.
    let r = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), BATCH as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let count = r as usize;
    for i in 0..count {
        got[i] = (msgs[i].msg_len as usize, socket_addr(&addrs[i], msgs[i].msg_hdr.msg_namelen));
    }
    Ok(count)
}

fn socket_addr(a: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    // SAFETY: recvmmsg wrote this address and its length.
    unsafe { socket2::SockAddr::new(*a, len) }.as_socket()
}

/// A glue datagram from `peer`'s endpoint `remote`, arrived on our socket
/// `local`. Valid only on a path (local == remote, and a path we have);
/// everything else is counted and dropped.
fn on_glue(peer: &mut Peer, local: usize, remote: usize, datagram: &[u8]) {
    let Some(paths) = peer.paths.as_mut() else {
        // One path: a probe is hole punching's (setup.rs `punch`); the
        // answer tells the peer where we are, through our NAT's mapping.
        if let Ok(p) = Probe::decode(datagram) {
            if p.kind == ProbeKind::Probe && local == 0 && remote == 0 {
                peer.link.send_glue(0, &p.ack().encode());
            }
        }
        return;
    };
    let probe = match Probe::decode(datagram) {
        Ok(p) if local == remote && usize::from(p.path) == local && local < paths.len() => p,
        _ => {
            paths.bad_probes += 1;
            return;
        }
    };
    match probe.kind {
        ProbeKind::Probe => {
            paths.paths[local].probes_in += 1;
            // Answered on the path it came on, so the ack proves that path.
            peer.link.send_glue(local, &probe.ack().encode());
        }
        ProbeKind::Ack => {
            if !paths.on_ack(Instant::now(), local, &probe) {
                paths.bad_probes += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{DropPlan, Link};
    use crate::options::Checksum;
    use crate::path::{PathTiming, Paths, PROBE_LEN};
    use std::net::UdpSocket;
    use std::sync::Arc;
    use std::time::Duration;

    /// A peer with two paths whose remote ends are two sockets we read.
    fn peer() -> (Peer, Vec<UdpSocket>) {
        let bind = || UdpSocket::bind("127.0.0.1:0").unwrap();
        let remotes = vec![bind(), bind()];
        for r in &remotes {
            r.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        }
        let pairs = remotes.iter().map(|r| (Arc::new(bind()), r.local_addr().unwrap())).collect();
        let drops = DropPlan { rate: 0.0, seed: 0, first_data: 0, chunks: vec![], data_nth: vec![], end_nth: vec![] };
        let link = Arc::new(Link::new(1, 1, pairs, Checksum::Offload, drops, None, None));
        let timing = PathTiming { interval: Duration::from_millis(100), fail: None, return_to_primary: true, copy_when_suspected: true };
        let peer = Peer::new(link, Some(Paths::new(2, timing, Instant::now())), 5000, 1280, None);
        (peer, remotes)
    }

    #[test]
    fn probes_are_answered_on_their_path_and_bad_ones_counted() {
        let (mut p, remotes) = peer();
        let probe = Probe { kind: ProbeKind::Probe, path: 1, seq: 7, stamp_us: 1234 };
        on_glue(&mut p, 1, 1, &probe.encode());
        let mut buf = [0u8; 64];
        let (n, from) = remotes[1].recv_from(&mut buf).unwrap();
        assert_eq!(Probe::decode(&buf[..n]), Ok(probe.ack()), "the ack echoes the probe");
        assert_eq!(from, p.link.paths[1].udp.local_addr().unwrap(), "answered from the path's own socket");
        let paths = p.paths.as_ref().unwrap();
        assert_eq!((paths.paths[1].probes_in, paths.bad_probes), (1, 0));

        let bad: Vec<(usize, usize, Vec<u8>)> = vec![
            (0, 0, vec![0, 0]),                                                // too short
            (0, 0, vec![0; PROBE_LEN + 1]),                                    // too long
            (0, 0, probe.encode().to_vec()),                                   // says path 1, came on 0
            (0, 1, Probe { path: 0, ..probe }.encode().to_vec()),              // socket 0 from the peer's address 1
            (5, 5, Probe { path: 5, ..probe }.encode().to_vec()),              // no such path
            (1, 1, Probe { kind: ProbeKind::Ack, ..probe }.encode().to_vec()), // ack of a probe never sent
        ];
        let n = bad.len() as u64;
        for (local, remote, d) in bad {
            on_glue(&mut p, local, remote, &d);
        }
        assert_eq!(p.paths.as_ref().unwrap().bad_probes, n);
        // Nothing answered the bad ones.
        remotes[0].set_nonblocking(true).unwrap();
        assert!(remotes[0].recv_from(&mut buf).is_err());

        // A real ack of a probe we sent counts.
        let mut due = vec![];
        p.paths.as_mut().unwrap().due_probes(Instant::now(), &mut due);
        let (i, sent) = due[0];
        on_glue(&mut p, i, i, &sent.ack().encode());
        let paths = p.paths.as_ref().unwrap();
        assert_eq!((paths.paths[i].acks_in, paths.bad_probes), (1, n));
    }
}
