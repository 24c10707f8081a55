//! The largest UDP payload to use towards a peer when none is configured:
//! the MTU the kernel's route to the peer's UDP address has (IP_MTU on a
//! connected UDP socket), minus the IP and UDP headers. This is what TCP
//! does for its MSS: on loopback it gives 65 KiB packets, on a 1500-byte
//! Ethernet path 1472, so a UDP-based transport (sctp, wamp) packs as many
//! bytes per packet as a TCP segment would there.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Largest UDP payload we use. UDP allows 65507 over IPv4, but with
/// 65507-byte packets associations died in the tests (usrsctp dropped
/// them); 65000 works.
pub const MAX_UDP_PAYLOAD: u32 = 65_000;
/// Used when the kernel cannot tell (no route yet, unusual family).
pub const FALLBACK: u32 = 1452;

/// UDP payload size for the route from `local` to `peer`.
pub fn auto_path_mtu(local: IpAddr, peer: SocketAddr) -> u32 {
    route_mtu(local, peer).map_or(FALLBACK, |mtu| payload_for(mtu, peer.is_ipv4()))
}

/// UDP payload that fits an IP packet of `mtu` bytes.
pub fn payload_for(mtu: u32, ipv4: bool) -> u32 {
    let headers = if ipv4 { 20 + 8 } else { 40 + 8 };
    mtu.saturating_sub(headers).clamp(576, MAX_UDP_PAYLOAD)
}

fn route_mtu(local: IpAddr, peer: SocketAddr) -> Option<u32> {
    let s = UdpSocket::bind(SocketAddr::new(local, 0)).ok()?;
    s.connect(peer).ok()?;
    let (level, name) = if peer.is_ipv4() { (libc::IPPROTO_IP, libc::IP_MTU) } else { (libc::IPPROTO_IPV6, libc::IPV6_MTU) };
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt on our own fd into a live int of the size passed.
    let r = unsafe { libc::getsockopt(s.as_raw_fd(), level, name, (&mut v as *mut libc::c_int).cast(), &mut len) };
    (r == 0 && v > 0).then_some(v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_subtracts_headers_and_clamps() {
        assert_eq!(payload_for(1500, true), 1472);
        assert_eq!(payload_for(1500, false), 1452);
        assert_eq!(payload_for(65536, true), MAX_UDP_PAYLOAD);
        assert_eq!(payload_for(100, true), 576);
    }

    #[test]
    fn loopback_route_gives_large_packets() {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mtu = auto_path_mtu("127.0.0.1".parse().unwrap(), peer.local_addr().unwrap());
        // lo's MTU is 65536 on Linux unless someone changed it.
        assert!(mtu > 9000, "loopback path MTU {mtu}");
    }
}
