//! An attacker on the host (needs root): copies of the UDP datagrams two
//! ranks exchange, read from a raw IPPROTO_UDP socket, and datagrams sent
//! with a forged source address (a raw IPPROTO_RAW socket writing its own
//! IPv4 header), so they arrive as if from a rank's own endpoint.

#![allow(dead_code)]

use std::io;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The IPv4 identification our forgeries carry, so the capture skips them.
const FORGED_ID: u16 = 0xbeef;

pub struct Spoofer {
    capture: OwnedFd,
    send: OwnedFd,
    buf: Vec<u8>,
}

/// One captured datagram: from, to, UDP payload.
pub struct Captured {
    pub from: SocketAddrV4,
    pub to: SocketAddrV4,
    pub payload: Vec<u8>,
}

fn raw(proto: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket call; the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, proto) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Spoofer {
    /// None when raw sockets are not allowed (not root).
    pub fn new() -> Option<Spoofer> {
        let capture = raw(libc::IPPROTO_UDP).ok()?;
        let send = raw(libc::IPPROTO_RAW).ok()?;
        let tv = libc::timeval { tv_sec: 0, tv_usec: 2000 };
        // SAFETY: setsockopt with a timeval on our fd.
        unsafe {
            libc::setsockopt(
                capture.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as _,
            )
        };
        Some(Spoofer { capture, send, buf: vec![0; 70_000] })
    }

    /// The next UDP datagram delivered on this host (not one of ours), or
    /// None within about 2 ms.
    pub fn capture(&mut self) -> Option<Captured> {
        loop {
            // SAFETY: reads into our buffer of its length.
            let n = unsafe { libc::recv(self.capture.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n <= 0 {
                return None;
            }
            let p = &self.buf[..n as usize];
            let ihl = usize::from(p[0] & 0x0f) * 4;
            if p.len() < ihl + 8 || u16::from_be_bytes([p[4], p[5]]) == FORGED_ID {
                continue;
            }
            let ip = |at: usize| std::net::Ipv4Addr::new(p[at], p[at + 1], p[at + 2], p[at + 3]);
            let port = |at: usize| u16::from_be_bytes([p[at], p[at + 1]]);
            return Some(Captured {
                from: SocketAddrV4::new(ip(12), port(ihl)),
                to: SocketAddrV4::new(ip(16), port(ihl + 2)),
                payload: p[ihl + 8..].to_vec(),
            });
        }
    }

    /// Sends `payload` to `to` as a UDP datagram from `from`.
    pub fn send(&self, from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        let len = 20 + 8 + payload.len();
        let mut d = Vec::with_capacity(len);
        d.extend_from_slice(&[0x45, 0]);
        d.extend_from_slice(&(len as u16).to_be_bytes());
        d.extend_from_slice(&FORGED_ID.to_be_bytes());
        d.extend_from_slice(&[0, 0, 64, libc::IPPROTO_UDP as u8, 0, 0]); // no fragments, TTL, UDP, checksum by the kernel
        d.extend_from_slice(&from.ip().octets());
        d.extend_from_slice(&to.ip().octets());
        d.extend_from_slice(&from.port().to_be_bytes());
        d.extend_from_slice(&to.port().to_be_bytes());
        d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        d.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
        d.extend_from_slice(payload);
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(to.ip().octets()) },
            sin_zero: [0; 8],
        };
        // SAFETY: a buffer of `d.len()` bytes and a sockaddr_in of its size.
        let n = unsafe {
            libc::sendto(
                self.send.as_raw_fd(),
                d.as_ptr().cast(),
                d.len(),
                0,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as _,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// CRC32c (Castagnoli, reflected), bit by bit: what an attacker computes to
/// make an altered SCTP packet pass the checksum.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82F6_3B78 } else { c >> 1 };
        }
    }
    !c
}

/// Writes a valid SCTP checksum into `packet` (bytes 8..12, little-endian
/// on the wire as RFC 4960 appendix B computes it).
pub fn fix_sctp_checksum(packet: &mut [u8]) {
    if packet.len() < 12 {
        return;
    }
    packet[8..12].fill(0);
    let c = crc32c(packet);
    packet[8..12].copy_from_slice(&c.to_le_bytes());
}

/// How long a capture waits at most (SO_RCVTIMEO above).
pub const CAPTURE_WAIT: Duration = Duration::from_millis(2);
