//! Where a rank reaches the key/value service when one address may not
//! do: across NAT the address mpirun's route names (a private source) is
//! unreachable from the far side, so a rank tries several at once.
//!
//! In order: `WANMPI_BOOTSTRAP` (mpirun's choice for the host: the given
//! `--bootstrap tcp:ADDR`, else the route's source toward the host), the
//! alternatives mpirun adds in `WANMPI_BOOTSTRAP_ALT` (the hostfile's
//! `addr=` for mpirun's own host; the routed address when one was given),
//! then the address ssh's far side names as its client
//! (`WANMPI_SSH_CLIENT`, set by the remote step from `$SSH_CONNECTION`)
//! with the service's port. They are dialled as Happy Eyeballs does: each
//! `STAGGER` after the one before, or at once when it failed; the first TCP
//! connection is taken and the others dropped, and the job secret is then
//! proved on it as on any.

use crate::addr::{BootstrapAddr, Stream};
use crate::BootstrapError;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Further addresses of the service, comma-separated (`tcp:HOST:PORT`).
pub const ENV_BOOTSTRAP_ALT: &str = "WANMPI_BOOTSTRAP_ALT";
/// The address ssh's far side sees its client at (the first field of
/// `$SSH_CONNECTION`), exported by mpirun's remote step.
pub const ENV_SSH_CLIENT: &str = "WANMPI_SSH_CLIENT";
/// How long a candidate has alone before the next one is dialled too.
pub const STAGGER: Duration = Duration::from_millis(250);

/// The service's addresses for this rank, in the order tried, without
/// repeats: `primary`, the alternatives, the ssh client's address with the
/// primary's port. A Unix socket has no alternatives.
pub fn candidates(primary: &str, get: impl Fn(&str) -> Option<String>) -> Result<Vec<BootstrapAddr>, BootstrapError> {
    let first = BootstrapAddr::parse(primary)?;
    let mut out = vec![first.clone()];
    let BootstrapAddr::Tcp(_, port) = first else { return Ok(out) };
    let mut push = |a: BootstrapAddr| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for alt in get(ENV_BOOTSTRAP_ALT).unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // A malformed alternative is skipped, not fatal: the primary may do.
        if let Ok(a @ BootstrapAddr::Tcp(..)) = BootstrapAddr::parse(alt) {
            push(a);
        }
    }
    if let Some(ip) = get(ENV_SSH_CLIENT).and_then(|s| s.trim().parse::<IpAddr>().ok()) {
        push(BootstrapAddr::Tcp(ip.to_canonical().to_string(), port));
    }
    Ok(out)
}

/// Connects to the first of `addrs` to answer, each dialled `STAGGER`
/// after the one before or as soon as the one before failed; gives up
/// after `timeout`. The error names every address and what became of it.
pub fn connect_first(addrs: &[BootstrapAddr], timeout: Duration) -> Result<Stream, BootstrapError> {
    if let [only] = addrs {
        return only.connect(timeout);
    }
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel::<(usize, Result<Stream, BootstrapError>)>();
    let mut started = 0;
    let mut failed: Vec<Option<String>> = vec![None; addrs.len()];
    let mut next_at = Instant::now();
    loop {
        let now = Instant::now();
        if started < addrs.len() && now >= next_at {
            let (i, a, tx) = (started, addrs[started].clone(), tx.clone());
            let left = deadline.saturating_duration_since(now);
            // Bounded by `left`: a connect that outlives the winner ends
            // with its own timeout and its stream is dropped unread.
            std::thread::spawn(move || {
                let _ = tx.send((i, connect_one(&a, left)));
            });
            started += 1;
            next_at = now + STAGGER;
        }
        let done = failed.iter().filter(|f| f.is_some()).count();
        if done == addrs.len() || now >= deadline {
            let what: Vec<String> =
                addrs.iter().zip(&failed).map(|(a, f)| format!("{}: {}", a.render(), f.as_deref().unwrap_or("no answer"))).collect();
            return Err(BootstrapError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "no address of the key/value service answered: {}. mpirun's machine cannot be reached from here (behind NAT or a firewall?): \
                     give mpirun --bootstrap tcp:ADDR:PORT with an address and port this host can reach",
                    what.join("; ")
                ),
            )));
        }
        let wake = if started < addrs.len() { next_at.min(deadline) } else { deadline };
        match rx.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok((_, Ok(s))) => return Ok(s),
            Ok((i, Err(e))) => {
                failed[i] = Some(match e {
                    BootstrapError::Io(io) => io.to_string(),
                    other => other.to_string(),
                });
                // The next one need not wait its turn.
                next_at = Instant::now();
            }
            Err(_) => {}
        }
    }
}

fn connect_one(a: &BootstrapAddr, timeout: Duration) -> Result<Stream, BootstrapError> {
    match a {
        BootstrapAddr::Unix(_) => a.connect(timeout),
        BootstrapAddr::Tcp(h, port) => {
            let sas: Vec<SocketAddr> = (h.as_str(), *port).to_socket_addrs()?.collect();
            let sa = sas.first().ok_or_else(|| BootstrapError::BadAddress(a.render(), "host resolves to no address".into()))?;
            let s = TcpStream::connect_timeout(sa, timeout.max(Duration::from_millis(1)))?;
            s.set_nodelay(true)?;
            Ok(Stream::Tcp(s))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn primary_then_alternatives_then_the_ssh_client_without_repeats() {
        let env = |k: &str| match k {
            ENV_BOOTSTRAP_ALT => Some("tcp:198.18.0.1:4000, garbage ,tcp:10.0.0.1:4000".to_string()),
            ENV_SSH_CLIENT => Some("198.18.0.1".to_string()),
            _ => None,
        };
        let got: Vec<String> = candidates("tcp:10.0.0.1:4000", env).unwrap().iter().map(BootstrapAddr::render).collect();
        assert_eq!(got, ["tcp:10.0.0.1:4000", "tcp:198.18.0.1:4000"]);
        let ssh = |k: &str| (k == ENV_SSH_CLIENT).then(|| "2001:2::9".to_string());
        let got: Vec<String> = candidates("tcp:10.0.0.1:4000", ssh).unwrap().iter().map(BootstrapAddr::render).collect();
        assert_eq!(got, ["tcp:10.0.0.1:4000", "tcp:[2001:2::9]:4000"]);
        assert_eq!(candidates("unix:/x/kv.sock", env).unwrap().len(), 1, "a Unix socket has no alternatives");
        assert!(candidates("nonsense", env).is_err());
    }

    #[test]
    fn the_first_address_to_answer_is_taken_and_failures_are_named() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // A port nothing listens on: refused at once, so the next is tried
        // without waiting its turn.
        let dead = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addrs = [BootstrapAddr::Tcp("127.0.0.1".into(), dead), BootstrapAddr::Tcp("127.0.0.1".into(), port)];
        let t = Instant::now();
        let s = connect_first(&addrs, Duration::from_secs(5)).unwrap();
        assert!(t.elapsed() < STAGGER, "took {:?}", t.elapsed());
        assert!(s.peer().ends_with(&format!(":{port}")));
        let e = connect_first(&addrs[..1].iter().chain(&addrs[..1]).cloned().collect::<Vec<_>>(), Duration::from_secs(5)).unwrap_err().to_string();
        assert!(e.contains("no address of the key/value service answered") && e.contains(&format!("127.0.0.1:{dead}")), "{e}");
    }
}
