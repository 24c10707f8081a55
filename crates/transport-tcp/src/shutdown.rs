//! Graceful end of every connection.
//!
//! Closing a socket that still has unread data makes the kernel send a reset,
//! and a reset makes the peer's kernel throw away data it has received but
//! its application has not read yet. So: push out our residuals, half-close
//! (FIN after our last byte), and read until each peer half-closes too, then
//! close. Whatever a peer still sends meanwhile is discarded: by the time the
//! engine shuts down, no communication is outstanding.

use crate::transport::{Slot, TcpTransport};
use std::io::{self, Read};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_transport::{Transport, TransportError};

pub(crate) fn graceful(t: &mut TcpTransport, timeout: Duration) -> Result<(), TransportError> {
    let deadline = Instant::now() + timeout;
    while t.flush()? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        t.epoll.wait(&mut t.events, Some(left))?;
    }
    let unsent: usize = t.peers.iter().map(|s| if let Slot::Open(c) = s { c.tx.pending_bytes() } else { 0 }).sum();

    let mut open: Vec<usize> = vec![];
    for (peer, slot) in t.peers.iter().enumerate() {
        if let Slot::Open(c) = slot {
            // A peer that is already gone makes this fail; nothing to do then.
            let _ = c.sock.shutdown(Shutdown::Write);
            // Watch readability only, so the wait below sleeps until EOFs arrive.
            let _ = t.epoll.modify(c.sock.as_raw_fd(), peer as u64, crate::sys::READ);
            open.push(peer);
        }
    }
    let mut scratch = vec![0u8; 64 * 1024];
    while !open.is_empty() {
        open.retain(|&peer| match &t.peers[peer] {
            Slot::Open(c) => !at_eof(&c.sock, &mut scratch),
            _ => false,
        });
        let left = deadline.saturating_duration_since(Instant::now());
        if open.is_empty() || left.is_zero() {
            break;
        }
        t.epoll.wait(&mut t.events, Some(left))?;
    }
    for slot in &t.peers {
        if let Slot::Open(c) = slot {
            let _ = t.epoll.delete(c.sock.as_raw_fd());
        }
    }
    t.mark_all_closed("transport shut down");
    if unsent > 0 {
        return Err(TransportError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("shutdown: {unsent} bytes could not be sent within {timeout:?}"),
        )));
    }
    Ok(())
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
