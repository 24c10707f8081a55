//! Sending side of one connection: all-or-nothing frames over a nonblocking
//! socket.
//!
//! A frame goes out in one vectored send of [length prefix, parts...]. If the
//! kernel takes only part of it, the unsent tail is kept here (the residual)
//! and the frame counts as sent: the caller may reuse its buffers. While a
//! residual exists no new frame is accepted until the residual has been
//! flushed, so at most one frame per peer is ever buffered here.
//!
//! A sealed connection (`record`) cannot send from the caller's parts: each
//! record is gathered and sealed in place into the residual buffer (reused,
//! so no allocation per frame) and pushed to the socket as soon as it is
//! sealed, so the receiver opens the first records while later ones are
//! still being sealed. While the socket takes every record whole, the next
//! record is sealed over the bytes of the last one, still in this core's
//! cache (a 1 MiB frame touches 64 KiB of buffer, not 1 MiB); once it
//! refuses, the rest of the frame piles up behind the unsent tail. A short
//! last record goes out in one send with the record before it.
//!
//! An acknowledgement (`stream`) due to the peer rides in front of a data
//! frame, in the same send (sealed as a record of its own on a sealed
//! connection), or goes alone by `send_ack`.

use crate::record::{records, seal_record, Gather, RECORD};
use crate::seal::Sealer;
use crate::stream::{ack_frame, ACK, CONTROL};
use crate::sys::{send_vectored, MAX_IOV};
use std::io;
use std::os::fd::RawFd;
use wanmpi_transport::SendStatus;

/// A frame's last record shorter than this is sent together with the
/// record before it.
const JOIN_TAIL: usize = 4096;

#[derive(Default)]
pub(crate) struct TxState {
    residual: Vec<u8>,
    sent: usize,
    /// Some when the connection is sealed.
    sealer: Option<Sealer>,
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

impl TxState {
    pub(crate) fn new(sealer: Option<Sealer>) -> TxState {
        TxState { residual: Vec::new(), sent: 0, sealer }
    }

    /// True while part of an accepted frame still waits for the socket.
    pub(crate) fn pending(&self) -> bool {
        self.sent < self.residual.len()
    }

    pub(crate) fn pending_bytes(&self) -> usize {
        self.residual.len() - self.sent
    }

    /// Pushes the residual; returns true when nothing is left.
    pub(crate) fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        if !self.push(fd)? {
            return Ok(false);
        }
        self.residual.clear();
        self.sent = 0;
        Ok(true)
    }

    /// Sends what the socket takes of the residual; true when all of it went.
    fn push(&mut self, fd: RawFd) -> io::Result<bool> {
        while self.pending() {
            match send_vectored(fd, &[&self.residual[self.sent..]]) {
                Ok(n) => self.sent += n,
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Sends one acknowledgement frame alone, all or nothing.
    pub(crate) fn send_ack(&mut self, fd: RawFd, n: u64) -> io::Result<SendStatus> {
        if !self.flush(fd)? {
            return Ok(SendStatus::WouldBlock);
        }
        if let Some(mut sealer) = self.sealer.take() {
            self.seal_ack(&mut sealer, n);
            self.sealer = Some(sealer);
            self.flush(fd)?;
            return Ok(SendStatus::Sent);
        }
        let f = ack_frame(n);
        let sent = match send_vectored(fd, &[&f]) {
            Ok(k) => k,
            Err(e) if would_block(&e) => return Ok(SendStatus::WouldBlock),
            Err(e) => return Err(e),
        };
        self.keep_tail(&[&f], sent);
        Ok(SendStatus::Sent)
    }

    /// Appends acknowledgement `n`, sealed, to the residual.
    fn seal_ack(&mut self, sealer: &mut Sealer, n: u64) {
        let f = ack_frame(n);
        let aad: [u8; 4] = [f[0], f[1], f[2], f[3]];
        self.residual.extend_from_slice(&aad);
        let body: [&[u8]; 1] = [&f[4..]];
        seal_record(sealer, &aad, ACK, 0, &mut Gather::new(&body), &mut self.residual);
    }

    /// Sends one frame made of `parts`, all or nothing, after
    /// acknowledgement `ack` if one is given (taken only with the frame).
    pub(crate) fn send_frame(&mut self, fd: RawFd, parts: &[&[u8]], ack: Option<u64>) -> io::Result<SendStatus> {
        if !self.flush(fd)? {
            return Ok(SendStatus::WouldBlock);
        }
        let body: usize = parts.iter().map(|p| p.len()).sum();
        let prefix = u32::try_from(body)
            .ok()
            .filter(|&b| b & CONTROL == 0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame of 2^31 bytes or more"))?
            .to_le_bytes();
        if self.sealer.is_some() {
            self.send_sealed(fd, parts, body, prefix, ack)?;
            return Ok(SendStatus::Sent);
        }
        let ackf = ack.map(ack_frame);
        let mut iov: Vec<&[u8]> = Vec::with_capacity(parts.len() + 2);
        if let Some(f) = &ackf {
            iov.push(f);
        }
        iov.push(&prefix);
        iov.extend(parts.iter().copied().filter(|p| !p.is_empty()));
        let joined;
        if iov.len() > MAX_IOV {
            // Rare: more parts than one sendmsg takes; join them once.
            joined = iov.concat();
            iov = vec![&joined];
        }
        let n = match send_vectored(fd, &iov) {
            Ok(n) => n,
            Err(e) if would_block(&e) => return Ok(SendStatus::WouldBlock),
            Err(e) => return Err(e),
        };
        self.keep_tail(&iov, n);
        Ok(SendStatus::Sent)
    }

    /// Seals the frame into the (empty) residual record by record, pushing
    /// each record out as it is ready; the frame is accepted whatever the
    /// socket took.
    fn send_sealed(&mut self, fd: RawFd, parts: &[&[u8]], body: usize, prefix: [u8; 4], ack: Option<u64>) -> io::Result<()> {
        let Some(mut sealer) = self.sealer.take() else { return Ok(()) };
        self.residual.clear();
        self.sent = 0;
        if let Some(n) = ack {
            self.seal_ack(&mut sealer, n);
        }
        self.residual.extend_from_slice(&prefix);
        let mut g = Gather::new(parts);
        let n = records(body);
        let mut res = Ok(true);
        for i in 0..n {
            seal_record(&mut sealer, &prefix, body, i, &mut g, &mut self.residual);
            // A short last record (an engine header past 64 KiB of data)
            // goes out with the one before it: one send, not two.
            if i + 1 < n && body - (i + 1) * RECORD >= JOIN_TAIL {
                res = self.push(fd);
                match res {
                    // All out: the next record reuses the same bytes,
                    // still in this core's cache.
                    Ok(true) => {
                        self.residual.clear();
                        self.sent = 0;
                    }
                    Ok(false) => {}
                    Err(_) => break, // the connection is lost; nothing more to seal
                }
            }
        }
        self.sealer = Some(sealer);
        res?;
        self.flush(fd).map(|_| ())
    }

    /// Copies what the kernel did not take (after `skip` bytes) into the residual.
    fn keep_tail(&mut self, iov: &[&[u8]], mut skip: usize) {
        for part in iov {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            self.residual.extend_from_slice(&part[skip..]);
            skip = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_full_socket_keeps_the_tail_and_then_refuses_until_flushed() {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut tx = TxState::default();
        let chunk = vec![0x5Au8; 64 * 1024];
        let mut accepted = 0usize;
        // Fill the socket until the transport refuses (bounded).
        for _ in 0..10_000 {
            match tx.send_frame(a.as_raw_fd(), &[b"hd", &chunk], None).unwrap() {
                SendStatus::Sent => accepted += 1,
                SendStatus::WouldBlock => break,
            }
        }
        assert!(accepted > 0 && accepted < 10_000);
        // Read everything the peer gets, flushing as room appears.
        let expect = accepted * (4 + 2 + chunk.len());
        let mut got = Vec::with_capacity(expect);
        let mut buf = vec![0u8; 1 << 16];
        b.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        while got.len() < expect {
            tx.flush(a.as_raw_fd()).unwrap();
            let n = b.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        assert!(!tx.pending());
        assert_eq!(got.len(), expect, "exactly the accepted frames arrive, no partial extra");
        for f in got.chunks(4 + 2 + chunk.len()) {
            assert_eq!(u32::from_le_bytes([f[0], f[1], f[2], f[3]]) as usize, 2 + chunk.len());
            assert_eq!(&f[4..6], b"hd");
            assert!(f[6..].iter().all(|&x| x == 0x5A));
        }
    }

    #[test]
    fn sealed_frames_through_a_full_socket_arrive_whole_and_in_order() {
        use crate::record::{wire_len, Progress, RECORD};
        use crate::seal::Keys;
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut tx = TxState::new(Some(Keys::derive(&[4; 32], b"tx", true).sealer));
        let mut opener = Keys::derive(&[4; 32], b"tx", false).opener;
        // Records that go out whole reuse the buffer; once the socket
        // is full the rest of the frame is kept: both paths, many times.
        let lens = [3 * RECORD + 7, 1, RECORD, 0, 2 * RECORD];
        let body = |k: usize| -> Vec<u8> { (0..lens[k % lens.len()]).map(|i| (i * 7 + k) as u8).collect() };
        let accepted = 40;
        let expect: usize = (0..accepted).map(|k| 4 + wire_len(lens[k % lens.len()])).sum();
        let mut got = Vec::with_capacity(expect);
        let mut buf = vec![0u8; 1 << 16];
        b.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut refused = 0;
        for k in 0..accepted {
            // Refused while a tail waits: read a little, retry (bounded).
            let f = body(k);
            let (head, tail) = f.split_at(f.len().min(1));
            while tx.send_frame(a.as_raw_fd(), &[head, tail], None).unwrap() == SendStatus::WouldBlock {
                refused += 1;
                assert!(refused < 100_000);
                let n = b.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
            }
        }
        assert!(refused > 0, "the socket never filled: only one path tested");
        while got.len() < expect {
            tx.flush(a.as_raw_fd()).unwrap();
            let n = b.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.len(), expect);
        let mut at = 0;
        for k in 0..accepted {
            let aad: [u8; 4] = got[at..at + 4].try_into().unwrap();
            let len = u32::from_le_bytes(aad) as usize;
            let wire = &mut got[at + 4..at + 4 + wire_len(len)];
            let n = wire.len();
            assert!(Progress::new(len).advance(&mut opener, &aad, wire, n).unwrap(), "frame {k} opens");
            assert_eq!(wire[..len], body(k)[..], "frame {k}");
            at += 4 + n;
        }
    }
}
