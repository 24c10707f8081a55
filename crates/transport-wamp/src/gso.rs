//! UDP generic segmentation offload (Linux 4.18+): one `sendmsg` hands the
//! kernel a run of equal-sized datagrams (the last may be shorter) that it
//! sends as separate datagrams. A 300 KiB message at MTU 1500 is 210
//! datagrams: one system call per 40 of them instead of one each.

use socket2::{MsgHdr, SockAddr, SockRef};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};

const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
/// Datagrams per call at most (the kernel's UDP_MAX_SEGMENTS).
pub const MAX_SEGMENTS: usize = 64;
/// Bytes per call at most (one UDP payload's limit, with room to spare).
pub const MAX_BYTES: usize = 60_000;

/// Sends `buf` to `to` as datagrams of `seg` bytes each (the last may be
/// shorter).
pub fn send_segments(udp: &UdpSocket, to: SocketAddr, buf: &[u8], seg: u16) -> io::Result<usize> {
    // One cmsghdr (16 bytes on 64-bit Linux) and its u16, padded to 8: the
    // u64 array keeps the alignment the kernel expects.
    let mut control = [0u64; 3];
    // SAFETY: CMSG_LEN is a pure size computation.
    let cmsg_len = unsafe { libc::CMSG_LEN(2) } as usize;
    {
        // SAFETY: viewing our own u64 array as its 24 bytes.
        let bytes: &mut [u8; 24] = unsafe { &mut *(control.as_mut_ptr() as *mut [u8; 24]) };
        bytes[..8].copy_from_slice(&cmsg_len.to_ne_bytes());
        bytes[8..12].copy_from_slice(&SOL_UDP.to_ne_bytes());
        bytes[12..16].copy_from_slice(&UDP_SEGMENT.to_ne_bytes());
        bytes[16..18].copy_from_slice(&seg.to_ne_bytes());
    }
    // SAFETY: CMSG_SPACE is a pure size computation; the array holds it.
    let space = unsafe { libc::CMSG_SPACE(2) } as usize;
    // SAFETY: the same array as bytes, read-only, for the call's duration.
    let control: &[u8] = unsafe { std::slice::from_raw_parts(control.as_ptr() as *const u8, space) };
    let addr = SockAddr::from(to);
    let iov = [IoSlice::new(buf)];
    let msg = MsgHdr::new().with_addr(&addr).with_buffers(&iov).with_control(control);
    SockRef::from(udp).sendmsg(&msg, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_sends_separate_datagrams() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let buf: Vec<u8> = (0..1000u32 * 3 + 250).map(|i| (i / 1000) as u8).collect();
        match send_segments(&tx, rx.local_addr().unwrap(), &buf, 1000) {
            Ok(n) => assert_eq!(n, buf.len()),
            Err(e) => {
                // A kernel without UDP GSO: the transport falls back to one
                // datagram per call, and so does this test.
                eprintln!("UDP GSO not available here: {e}");
                return;
            }
        }
        let mut got = vec![];
        let mut b = [0u8; 2000];
        for _ in 0..4 {
            let n = rx.recv(&mut b).unwrap();
            got.push((n, b[0]));
        }
        assert_eq!(got, [(1000, 0), (1000, 1), (1000, 2), (250, 3)]);
    }
}
