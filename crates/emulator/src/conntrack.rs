//! Forgetting a NATed host's connection tracking entries (its NAT
//! mappings), as a NAT that reboots or expires its mappings does: one
//! ctnetlink "delete" request with no tuple, which flushes the table of the
//! namespace the socket was made in. No `conntrack` tool needed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_NETFILTER: libc::c_int = 12;
const NFNL_SUBSYS_CTNETLINK: u16 = 1;
const IPCTNL_MSG_CT_DELETE: u16 = 2;

/// Flush the conntrack table (IPv4) of the calling thread's network namespace.
pub fn flush_current() -> io::Result<()> {
    // SAFETY: plain socket creation; the fd is owned at once.
    let raw = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_NETFILTER) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // nlmsghdr (16 bytes) + nfgenmsg (4 bytes): family, version, res_id
    let mut msg = [0u8; 20];
    msg[0..4].copy_from_slice(&20u32.to_ne_bytes());
    msg[4..6].copy_from_slice(&((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE).to_ne_bytes());
    msg[6..8].copy_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence number
    msg[16] = libc::AF_INET as u8;
    // SAFETY: a zeroed sockaddr_nl addresses the kernel.
    let mut to: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    to.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: valid buffer and address of the stated lengths.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    // The acknowledgement: an NLMSG_ERROR whose code is 0 on success.
    let timeout = libc::timeval { tv_sec: 2, tv_usec: 0 };
    // SAFETY: a valid timeval for SO_RCVTIMEO.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let mut buf = [0u8; 256];
    // SAFETY: a valid buffer of its length.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= 20 && u16::from_ne_bytes([buf[4], buf[5]]) == libc::NLMSG_ERROR as u16 {
        let code = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
        // ENOENT: nothing to flush
        if code != 0 && code != -libc::ENOENT {
            return Err(io::Error::from_raw_os_error(-code));
        }
    }
    Ok(())
}
