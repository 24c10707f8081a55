//! Graceful end of every connection.
//!
//! Closing a socket that still has unread data makes the kernel send a reset,
//! and a reset makes the peer's kernel throw away data it has received but
//! its application has not read yet. So: push out our residuals (and wait,
//! within the timeout, for a broken connection to be replaced so its
//! queued frames go too), stop listening, half-close (FIN after our last
//! byte: the peer takes it for a close on purpose, not a break), and read
//! until each peer half-closes too, then close. Whatever a peer still sends meanwhile is discarded: by the time the
//! engine shuts down, no communication is outstanding.

use crate::transport::{Conn, Slot, TcpTransport};
use std::io::{self, Read};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_transport::{Transport, TransportError};

pub(crate) fn graceful(t: &mut TcpTransport, timeout: Duration) -> Result<(), TransportError> {
    let deadline = Instant::now() + timeout;
    // `wait` also drives redials and their deadlines.
    while t.flush()? || undelivered(t) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        t.wait(left.min(Duration::from_millis(100)))?;
        // Arrivals are discarded (see above); losses are taken so `wait` sleeps.
        t.poll_recv(&mut |_| {})?;
    }
    let (mut unsent, mut queued) = (0usize, 0u64);
    for s in &t.peers {
        if let Slot::Peer(p) = s {
            if p.lost.is_none() {
                unsent += p.conn.as_ref().map_or(0, |c| c.tx.pending_bytes());
                queued += p.stream.queued();
            }
        }
    }
    t.redial.close(&t.epoll);

    let mut open: Vec<usize> = vec![];
    for (peer, slot) in t.peers.iter().enumerate() {
        if let Some(c) = conn(slot) {
            // A peer that is already gone makes this fail; nothing to do then.
            let _ = c.sock.shutdown(Shutdown::Write);
            // Watch readability only, so the wait below sleeps until EOFs arrive.
            let _ = t.epoll.modify(c.sock.as_raw_fd(), peer as u64, crate::sys::READ);
            open.push(peer);
        }
    }
    let mut scratch = vec![0u8; 64 * 1024];
    while !open.is_empty() {
        open.retain(|&peer| conn(&t.peers[peer]).is_some_and(|c| !at_eof(&c.sock, &mut scratch)));
        let left = deadline.saturating_duration_since(Instant::now());
        if open.is_empty() || left.is_zero() {
            break;
        }
        t.epoll.wait(&mut t.events, Some(left))?;
    }
    for slot in &t.peers {
        if let Some(c) = conn(slot) {
            let _ = t.epoll.delete(c.sock.as_raw_fd());
        }
    }
    t.mark_all_closed("transport shut down");
    if unsent > 0 || queued > 0 {
        return Err(TransportError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("shutdown: {unsent} bytes and {queued} queued frames could not be sent within {timeout:?}"),
        )));
    }
    Ok(())
}

fn conn(slot: &Slot) -> Option<&Conn> {
    match slot {
        Slot::Peer(p) if p.lost.is_none() => p.conn.as_ref(),
        _ => None,
    }
}

/// Frames queued for a peer whose connection is being replaced.
fn undelivered(t: &TcpTransport) -> bool {
    t.peers.iter().any(|s| matches!(s, Slot::Peer(p) if p.lost.is_none() && p.conn.is_none() && p.stream.backlog()))
}

/// Reads and discards until the socket would block (false) or reports EOF or
/// an error (true). Bounded: at most 1024 reads per call.
fn at_eof(mut sock: &socket2::Socket, scratch: &mut [u8]) -> bool {
    for _ in 0..1024 {
        match sock.read(scratch) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
    false
}
