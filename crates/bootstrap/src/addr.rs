//! Where the key/value service listens, and the stream both ends talk over.
//!
//! `unix:/path` is the default: local ranks and ranks in network namespaces
//! share the filesystem, so a Unix socket reaches all of them without any
//! network. `tcp:host:port` is for ranks on real remote hosts.

use crate::BootstrapError;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// A parsed bootstrap address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootstrapAddr {
    Unix(PathBuf),
    /// Host (name or IP literal, IPv6 in brackets) and port.
    Tcp(String, u16),
}

impl BootstrapAddr {
    pub fn parse(s: &str) -> Result<BootstrapAddr, BootstrapError> {
        let bad = |p: &str| BootstrapError::BadAddress(s.to_string(), p.to_string());
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(bad("empty socket path"));
            }
            return Ok(BootstrapAddr::Unix(PathBuf::from(path)));
        }
        if let Some(rest) = s.strip_prefix("tcp:") {
            let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("expected tcp:host:port"))?;
            let port: u16 = port.parse().map_err(|_| bad("port is not a number"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(bad("empty host"));
            }
            return Ok(BootstrapAddr::Tcp(host.to_string(), port));
        }
        Err(bad("expected unix:/path or tcp:host:port"))
    }

    /// The string form that `parse` reads back.
    pub fn render(&self) -> String {
        match self {
            BootstrapAddr::Unix(p) => format!("unix:{}", p.display()),
            BootstrapAddr::Tcp(h, port) if h.contains(':') => format!("tcp:[{h}]:{port}"),
            BootstrapAddr::Tcp(h, port) => format!("tcp:{h}:{port}"),
        }
    }

    /// Connects, giving up after `timeout` (per resolved address for TCP).
    pub fn connect(&self, timeout: Duration) -> Result<Stream, BootstrapError> {
        match self {
            BootstrapAddr::Unix(p) => Ok(Stream::Unix(UnixStream::connect(p)?)),
            BootstrapAddr::Tcp(h, port) => {
                let mut last = None;
                for sa in (h.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&sa, timeout) {
                        Ok(s) => {
                            // Lines are tiny request/reply pairs: do not let Nagle hold them.
                            s.set_nodelay(true)?;
                            return Ok(Stream::Tcp(s));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.map(BootstrapError::Io).unwrap_or_else(|| BootstrapError::BadAddress(self.render(), "host resolves to no address".into())))
            }
        }
    }
}

/// A connected stream of either kind.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
    pub fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
    /// The socket's descriptor (to poll it).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    pub fn shutdown(&self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        }
    }
    /// Who is on the other end, for log messages.
    pub fn peer(&self) -> String {
        match self {
            Stream::Unix(_) => "a local process".to_string(),
            Stream::Tcp(s) => s.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "an unknown peer".into()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

// Reading and writing through a shared reference, as the std sockets allow,
// so one connection can be read and answered from the same thread.
impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match *self {
            Stream::Unix(s) => (&*s).read(buf),
            Stream::Tcp(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match *self {
            Stream::Unix(s) => (&*s).write(buf),
            Stream::Tcp(s) => (&*s).write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders_both_forms() {
        let u = BootstrapAddr::parse("unix:/tmp/x/kv.sock").unwrap();
        assert_eq!(u, BootstrapAddr::Unix("/tmp/x/kv.sock".into()));
        assert_eq!(u.render(), "unix:/tmp/x/kv.sock");
        let t = BootstrapAddr::parse("tcp:127.0.0.1:4000").unwrap();
        assert_eq!(t, BootstrapAddr::Tcp("127.0.0.1".into(), 4000));
        let v6 = BootstrapAddr::parse("tcp:[::1]:9").unwrap();
        assert_eq!(v6, BootstrapAddr::Tcp("::1".into(), 9));
        assert_eq!(v6.render(), "tcp:[::1]:9");
        for bad in ["", "unix:", "tcp:host", "tcp::80", "tcp:h:notaport", "udp:h:1"] {
            assert!(BootstrapAddr::parse(bad).is_err(), "{bad} should be refused");
        }
    }
}
