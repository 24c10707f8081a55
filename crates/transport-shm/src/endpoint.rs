//! What a rank publishes through the job's key/value service so that its
//! local peers can open its inbound memory and doorbell: its pid, the two
//! fd numbers, the doorbell pipe's inode, and the random token written in
//! every header of its inbound memory. The service is the job's own
//! (every rank proved the job secret to it), so a value read there comes
//! from a rank of this job.

use std::fmt;

/// The key of `rank`'s endpoint.
pub(crate) fn key(rank: u32) -> String {
    format!("shm-ep-{rank}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub pid: u32,
    pub mem_fd: i32,
    pub bell_fd: i32,
    pub bell_ino: u64,
    pub token: [u64; 2],
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self;
        write!(f, "{}.{}.{}.{}.{:016x}{:016x}", e.pid, e.mem_fd, e.bell_fd, e.bell_ino, e.token[0], e.token[1])
    }
}

impl Endpoint {
    /// Parses what `Display` wrote; None for anything else.
    pub(crate) fn parse(s: &str) -> Option<Endpoint> {
        let mut it = s.split('.');
        let pid = it.next()?.parse().ok()?;
        let mem_fd = it.next()?.parse().ok()?;
        let bell_fd = it.next()?.parse().ok()?;
        let bell_ino = it.next()?.parse().ok()?;
        let t = it.next()?;
        if it.next().is_some() || t.len() != 32 || !t.bytes().all(|b| b.is_ascii_hexdigit()) || pid == 0 || mem_fd < 0 || bell_fd < 0 {
            return None;
        }
        let token = [u64::from_str_radix(&t[..16], 16).ok()?, u64::from_str_radix(&t[16..], 16).ok()?];
        Some(Endpoint { pid, mem_fd, bell_fd, bell_ino, token })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_reads_back_and_garbage_does_not() {
        let e = Endpoint { pid: 4242, mem_fd: 7, bell_fd: 9, bell_ino: 123456, token: [u64::MAX, 1] };
        let s = e.to_string();
        assert_eq!(s, "4242.7.9.123456.ffffffffffffffff0000000000000001");
        assert_eq!(Endpoint::parse(&s), Some(e));
        for bad in
            ["", "1.2.3.4", "1.2.3.4.xyz", "0.7.9.1.ffffffffffffffff0000000000000001", "1.-7.9.1.ffffffffffffffff0000000000000001", &format!("{s}.5")]
        {
            assert_eq!(Endpoint::parse(bad), None, "{bad}");
        }
    }
}
