//! Local interface addresses (getifaddrs), for `path_nets`: a launcher that
//! gives every rank the same environment names the networks of the extra
//! paths, and each rank finds its own address in each.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every address configured on an interface of this network namespace.
pub(crate) fn local_addrs() -> io::Result<Vec<IpAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = vec![];
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned; the
        // sockaddr is read according to its family.
        unsafe {
            let ifa = &*cur;
            if !ifa.ifa_addr.is_null() {
                match i32::from((*ifa.ifa_addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = ifa.ifa_next;
        }
    }
    // SAFETY: the list from getifaddrs, freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// Whether `addr` is inside `net/len`.
pub(crate) fn in_net(addr: IpAddr, net: IpAddr, len: u8) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if len <= 32 => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if len <= 128 => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_and_loopback_is_found() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(in_net(ip("198.19.0.2"), ip("198.19.0.0"), 24));
        assert!(!in_net(ip("198.18.0.2"), ip("198.19.0.0"), 24));
        assert!(in_net(ip("10.1.2.3"), ip("0.0.0.0"), 0));
        assert!(!in_net(ip("10.1.2.3"), ip("::"), 0), "families never match");
        assert!(in_net(ip("fd00::5"), ip("fd00::"), 64));
        assert!(!in_net(ip("fd01::5"), ip("fd00::"), 64));
        assert!(!in_net(ip("10.0.0.1"), ip("10.0.0.0"), 33));
        assert!(local_addrs().unwrap().contains(&ip("127.0.0.1")));
    }
}
