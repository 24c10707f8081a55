//! Teardown: graceful shutdown of every association (bounded), then closing
//! the socket, releasing the AF_CONN addresses and, for the last transport
//! of the process, finishing usrsctp. Also the crash simulation tests use.

use crate::stack::{self, TICK};
use crate::transport::SctpTransport;
use std::time::{Duration, Instant};
use usrsctp_sys as sys;
use wanmpi_transport::TransportError;

impl SctpTransport {
    pub(crate) fn shutdown_gracefully(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if self.sock.is_none() {
            return Ok(());
        }
        self.shutting_down = true;
        if self.opts.print_stats {
            eprintln!("{}", self.counters());
        }
        let deadline = Instant::now() + timeout;
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
        loop {
            self.pump()?;
            let all_closed = self.peers.iter().flatten().all(|p| p.closed || p.assoc.is_none());
            let now = Instant::now();
            if all_closed || now >= deadline {
                break;
            }
            self.poller.wait((deadline - now).min(TICK))?;
        }
        // Whatever did not finish in time is aborted by close_now.
        self.close_now();
        Ok(())
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
