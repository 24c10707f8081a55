//! Teardown: graceful shutdown of every association (bounded), then closing
//! the socket, releasing the AF_CONN addresses and, for the last transport
//! of the process, finishing usrsctp. Also the crash simulation tests use.

use crate::stack::{self, TICK};
use crate::transport::SctpTransport;
use std::time::{Duration, Instant};
use usrsctp_sys as sys;
use wanmpi_transport::{PeerId, TransportError};

impl SctpTransport {
    pub(crate) fn shutdown_gracefully(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if self.sock.is_none() {
            return Ok(());
        }
        self.shutting_down = true;
        if self.opts.print_stats {
            eprintln!("{}", self.counters());
        }
        let start = Instant::now();
        let deadline = start + timeout;
        let open: Vec<(u32, u32)> = self
            .peers
            .iter()
            .enumerate()
            .filter_map(|(r, p)| p.as_ref().filter(|p| !p.closed).and_then(|p| p.assoc).map(|a| (r as u32, a)))
            .collect();
        for (rank, assoc) in open {
            // SCTP_EOF: SHUTDOWN once everything queued has been acknowledged.
            let sent = self.sock.as_ref().map(|s| s.send(assoc, 0, 0, sys::SCTP_EOF, &[]));
            if !matches!(sent, Some(Ok(_))) {
                self.close_peer(rank);
            }
        }
        let settled = loop {
            self.pump()?;
            let settled = self.shutdown_settled();
            let now = Instant::now();
            if settled || now >= deadline {
                break settled;
            }
            self.poller.wait((deadline - now).min(TICK))?;
        };
        if self.opts.print_stats {
            let left = self.peers.iter().flatten().filter(|p| !p.closed && p.assoc.is_some()).count();
            eprintln!(
                "sctp rank {}: shutdown {} after {:?}, {left} association(s) aborted at close",
                self.rank,
                if settled { "settled" } else { "timed out" },
                start.elapsed(),
            );
        }
        if !settled {
            // Data to or from these peers may not have been acknowledged:
            // say so, since the job itself may still end well.
            let unsettled: Vec<usize> =
                self.peers.iter().enumerate().filter(|(_, p)| p.as_ref().is_some_and(|p| !p.closed && p.assoc.is_some())).map(|(r, _)| r).collect();
            eprintln!(
                "wanmpi: rank {}: sctp shutdown timed out after {:?}; aborting the associations with ranks {unsettled:?}",
                self.rank,
                start.elapsed()
            );
        }
        // What is left (settled associations waiting for the last step of
        // the handshake, or whatever did not finish in time) is aborted.
        self.close_now();
        Ok(())
    }

    /// Whether every association is closed or can lose nothing more.
    ///
    /// An association in SHUTDOWN-ACK-SENT has received the peer's SHUTDOWN
    /// (sent by the peer only once all its data was acknowledged by us) and
    /// has sent SHUTDOWN-ACK (sent by us only once all ours was acknowledged
    /// by the peer): all that is left is the peer's SHUTDOWN-COMPLETE. If
    /// that is lost, usrsctp retransmits the SHUTDOWN-ACK, maybe to a peer
    /// that already exited, until the timeout; nothing is gained by
    /// waiting. Aborting it costs the peer nothing either: a peer still in
    /// SHUTDOWN-SENT (our SHUTDOWN-ACK lost) closes on the ABORT at once.
    /// Every other state (SHUTDOWN-PENDING, SHUTDOWN-SENT, SHUTDOWN-RECEIVED)
    /// may still have data unacknowledged one way or the other: we wait.
    fn shutdown_settled(&mut self) -> bool {
        let mut settled = true;
        for rank in 0..self.peers.len() {
            let Some(Some(p)) = self.peers.get(rank) else { continue };
            let Some(assoc) = p.assoc.filter(|_| !p.closed) else { continue };
            let Some(sock) = self.sock.as_ref() else { return true };
            match sock.info::<sys::sctp_status>(assoc, sys::SCTP_STATUS) {
                // usrsctp no longer knows the association: it is gone.
                Err(_) => self.close_peer(rank as PeerId),
                Ok(st) if st.sstat_state == sys::SCTP_CLOSED => self.close_peer(rank as PeerId),
                Ok(st) if st.sstat_state == sys::SCTP_SHUTDOWN_ACK_SENT && st.sstat_unackdata == 0 && st.sstat_penddata == 0 => {}
                Ok(_) => settled = false,
            }
        }
        settled
    }

    /// Closes the socket (aborting open associations), releases this
    /// transport's AF_CONN addresses and its share of the stack.
    pub(crate) fn close_now(&mut self) {
        if self.stack.is_none() {
            return;
        }
        if let Some(sock) = self.sock.take() {
            sock.abort_on_close();
            drop(sock);
        }
        self.release_links();
        self.stack.take(); // the last one finishes usrsctp
    }

    fn release_links(&mut self) {
        for p in self.peers.iter().flatten() {
            stack::unregister_link(p.link.token);
            // SAFETY: registered in connect, deregistered once (before
            // usrsctp_finish, which crashed in the other order).
            unsafe { sys::usrsctp_deregister_address(p.link.token as *mut libc::c_void) };
        }
        for p in self.peers.iter_mut().flatten() {
            p.closed = true;
        }
    }

    /// For tests: vanish as a crashed process would. Nothing more leaves
    /// this transport (not even an ABORT), its UDP socket closes, and its
    /// peers can only notice through unanswered heartbeats.
    pub fn simulate_crash(mut self) {
        for p in self.peers.iter().flatten() {
            stack::unregister_link(p.link.token);
        }
        self.close_now();
    }
}

impl Drop for SctpTransport {
    fn drop(&mut self) {
        self.close_now();
    }
}
