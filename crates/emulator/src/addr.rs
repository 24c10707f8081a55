//! The address plan. Host `i` (0-based) is `198.18.0.(i+1)/24` on path 0
//! (device `tun0`) and `198.19.0.(i+1)/24` on path 1 (device `tun1`). Both
//! ranges are inside 198.18.0.0/15, the benchmarking range, and only exist
//! inside the emulation's namespaces.

use std::net::Ipv4Addr;

/// Prefix length of every emulated subnet.
pub const PREFIX_LEN: u8 = 24;

/// Address of `host` on `path`.
pub fn host_addr(host: usize, path: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 18 + path, 0, (host + 1) as u8)
}

/// The host and path an address belongs to, if it is one of ours.
pub fn host_of_addr(ip: [u8; 4], hosts: usize, paths: u8) -> Option<(usize, u8)> {
    if ip[0] != 198 || ip[2] != 0 || ip[3] == 0 {
        return None;
    }
    let path = ip[1].checked_sub(18)?;
    let host = ip[3] as usize - 1;
    (path < paths && host < hosts).then_some((host, path))
}

/// Name of the TUN device for `path` inside every host.
pub fn tun_name(path: u8) -> String {
    format!("tun{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips() {
        for path in 0..2u8 {
            for host in [0usize, 1, 249] {
                let a = host_addr(host, path);
                assert_eq!(host_of_addr(a.octets(), 250, 2), Some((host, path)));
            }
        }
        assert_eq!(host_addr(0, 0), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(host_of_addr([198, 19, 0, 1], 4, 1), None, "second path not configured");
        assert_eq!(host_of_addr([198, 18, 0, 9], 4, 1), None, "beyond host count");
        assert_eq!(host_of_addr([10, 18, 0, 1], 4, 1), None);
        assert_eq!(host_of_addr([198, 17, 0, 1], 4, 2), None);
    }
}
