//! The job environment the launcher hands a rank, and the job secret, which
//! comes on a pipe rather than in the environment (see [`JobEnv::from_env`]).
//! A spawned rank's parent port travels the same way: its public part
//! (`WANMPI_PARENT_PORT=wanmpi-port:1:HOST:PORT`) in the environment, its
//! secret on the pipe after the job secret.

use crate::port::PortName;
use crate::{BootstrapError, ENV_PARENT_PORT};
use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

/// Rank of this process in MPI_COMM_WORLD.
pub const ENV_RANK: &str = "WANMPI_RANK";
/// Number of processes in the job.
pub const ENV_SIZE: &str = "WANMPI_SIZE";
/// Where the key/value service listens: `unix:/path` or `tcp:host:port`.
pub const ENV_BOOTSTRAP: &str = "WANMPI_BOOTSTRAP";
/// The job's secret as 64 hex digits (32 random bytes), fresh for every job.
/// Only for ranks started by hand: it is visible in `/proc/PID/environ` for
/// the process's whole life. The launcher uses [`ENV_SECRET_FD`] instead.
pub const ENV_SECRET: &str = "WANMPI_JOB_SECRET";
/// A file descriptor (a pipe) from which the rank reads the secret: 64 hex
/// digits. The launcher sets it to 3; nothing secret is in the environment.
pub const ENV_SECRET_FD: &str = "WANMPI_JOB_SECRET_FD";
/// A job id, unique per launch (names temporary files, appears in logs).
pub const ENV_JOB_ID: &str = "WANMPI_JOB_ID";
/// The transport to use: tcp, sctp, ...
pub const ENV_TRANSPORT: &str = "WANMPI_TRANSPORT";
/// The address this rank publishes for its peers to reach it. Without it
/// the rank chooses by route (`own_addr`); transports default to 127.0.0.1
/// when nothing is chosen (a job on one host).
pub const ENV_ADDR: &str = "WANMPI_ADDR";

/// Everything the launcher tells a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    pub rank: u32,
    pub size: u32,
    pub bootstrap: String,
    pub secret: [u8; 32],
    pub job_id: String,
    pub transport: String,
    pub addr: Option<String>,
    /// A spawned rank's parent port, whole (secret included): from
    /// `WANMPI_PARENT_PORT` and the secret pipe.
    pub parent_port: Option<String>,
}

fn var(name: &'static str) -> Result<String, BootstrapError> {
    std::env::var(name).map_err(|e| BootstrapError::BadEnv { var: name, problem: e.to_string() })
}

fn parse_secret(hex: &str) -> Result<[u8; 32], BootstrapError> {
    let bad = |p: &str| BootstrapError::BadEnv { var: ENV_SECRET, problem: p.to_string() };
    // Bytes, not characters: a non-ASCII value is an error, never a panic
    // on a slice inside a character.
    let digits = hex.as_bytes();
    if digits.len() != 64 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(bad("must be 64 hex digits (0-9, a-f)"));
    }
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = nibble(digits[2 * i]) << 4 | nibble(digits[2 * i + 1]);
    }
    Ok(out)
}

/// Reads `count` secrets from the pipe `fd` names: 64 hex digits each
/// (whitespace between them is skipped), waiting at most `timeout` for
/// them (over ssh they may still be on their way). The descriptor is
/// closed afterwards, so it can be read only once.
fn read_secret_fd(fd_text: &str, count: usize, timeout: Duration) -> Result<Vec<[u8; 32]>, BootstrapError> {
    let want_all = 64 * count;
    let bad = |p: String| BootstrapError::BadEnv { var: ENV_SECRET_FD, problem: p };
    let fd: i32 = fd_text.trim().parse().map_err(|_| bad(format!("{fd_text:?} is not a file descriptor number")))?;
    if fd < 3 {
        return Err(bad(format!("{fd} is a standard stream, not the secret's pipe")));
    }
    // Only a pipe or a socket: never take over an unrelated file the
    // process happens to hold under that number.
    // SAFETY: fstat writes into the zeroed struct we pass; a bad fd is an error.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(bad(format!("descriptor {fd} is not open (the secret can be read once, at init): {}", std::io::Error::last_os_error())));
    }
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
        return Err(bad(format!("descriptor {fd} is not a pipe")));
    }
    // SAFETY: the descriptor is open, is a pipe or socket, and the launcher
    // gave it to us for this alone; the File owns and closes it.
    let mut f = unsafe { File::from_raw_fd(fd) };
    let deadline = Instant::now() + timeout;
    let mut hex = Vec::with_capacity(want_all);
    let mut buf = [0u8; 64];
    while hex.len() < want_all {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(bad(format!("no secret on descriptor {fd} within {timeout:?}")));
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, left.as_millis().clamp(1, i32::MAX as u128) as i32) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(bad(e.to_string()));
        }
        if r == 0 {
            continue;
        }
        // Never more than the digits still missing: what follows is not ours.
        let want = (want_all - hex.len()).min(buf.len());
        match f.read(&mut buf[..want]) {
            Ok(0) => return Err(bad(format!("the pipe closed after {} of {want_all} hex digits", hex.len()))),
            Ok(n) => hex.extend(buf[..n].iter().copied().filter(|b| !b.is_ascii_whitespace())),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    let text = String::from_utf8(hex).map_err(|_| bad("not hexadecimal".into()))?;
    (0..count).map(|i| parse_secret(&text[64 * i..64 * (i + 1)])).collect()
}

/// Takes the secret: from the pipe in `WANMPI_JOB_SECRET_FD`, else from
/// `WANMPI_JOB_SECRET` (ranks started by hand), then removes both variables
/// from this process's environment so that no program it starts inherits
/// them.
///
/// Removing variables races with any other thread reading the environment
/// (C's `getenv` takes no lock Rust's `remove_var` holds). It is safe here
/// because a rank reads its job environment once, in MPI init, before the
/// runtime starts any thread of its own. The one case left is an
/// application thread calling `getenv` at that very moment; glibc's
/// `unsetenv` only shifts pointers inside `environ` and frees nothing, so
/// such a reader can at worst miss a variable, not crash.
///
/// A spawned rank's `WANMPI_PARENT_PORT` is taken too: when it lacks its
/// secret (as mpirun sets it), the secret is the pipe's second one.
/// Returns the job secret and the whole parent port name.
fn take_secrets(timeout: Duration) -> Result<([u8; 32], Option<String>), BootstrapError> {
    let take = |k: &str| {
        let v = std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
        std::env::remove_var(k);
        v
    };
    let (from_fd, from_env, parent) = (take(ENV_SECRET_FD), take(ENV_SECRET), take(ENV_PARENT_PORT));
    let bad_port = |p: String| BootstrapError::BadEnv { var: ENV_PARENT_PORT, problem: p };
    let parent = match parent.filter(|p| !p.trim().is_empty()) {
        None => None,
        Some(p) => Some((PortName::parse_public(&p).map_err(bad_port)?, p)),
    };
    let port_on_pipe = parent.as_ref().is_some_and(|((_, _, s), _)| s.is_none());
    let (job, port_secret) = match (from_fd, from_env) {
        (Some(fd), _) => {
            let mut got = read_secret_fd(&fd, 1 + port_on_pipe as usize, timeout)?;
            let port = port_on_pipe.then(|| got.pop()).flatten();
            (got[0], port)
        }
        (None, Some(hex)) if !port_on_pipe => (parse_secret(&hex)?, None),
        (None, Some(_)) => return Err(bad_port(format!("has no secret, and there is no {ENV_SECRET_FD} to carry it"))),
        (None, None) => {
            return Err(BootstrapError::BadEnv {
                var: ENV_SECRET_FD,
                problem: format!("neither it nor {ENV_SECRET} is set (the secret is taken once, at init)"),
            })
        }
    };
    let parent = parent.map(|((host, port, secret), whole)| match (secret, port_secret) {
        (None, Some(secret)) => PortName { host, port, secret }.render(),
        _ => whole,
    });
    Ok((job, parent))
}

impl JobEnv {
    /// Reads the job environment. `Ok(None)` when the process was not started
    /// by a launcher (no `WANMPI_RANK`): it then runs as a singleton job.
    ///
    /// It *takes* the secret (see `take_secret`): call it once, at init,
    /// before this process starts threads; a second call fails.
    pub fn from_env() -> Result<Option<JobEnv>, BootstrapError> {
        if std::env::var_os(ENV_RANK).is_none() {
            return Ok(None);
        }
        let num = |name: &'static str| -> Result<u32, BootstrapError> {
            var(name)?.parse().map_err(|e: std::num::ParseIntError| BootstrapError::BadEnv { var: name, problem: e.to_string() })
        };
        let rank = num(ENV_RANK)?;
        let size = num(ENV_SIZE)?;
        if size == 0 || rank >= size {
            return Err(BootstrapError::BadEnv { var: ENV_RANK, problem: format!("rank {rank} not below size {size}") });
        }
        let bootstrap = var(ENV_BOOTSTRAP)?;
        let job_id = var(ENV_JOB_ID)?;
        let (secret, parent_port) = take_secrets(crate::timeout_from_env())?;
        Ok(Some(JobEnv {
            rank,
            size,
            bootstrap: bootstrap.clone(),
            secret,
            job_id,
            transport: std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "auto".into()),
            addr: crate::own_addr::choose(|k| std::env::var(k).ok(), rank, &bootstrap)?,
            parent_port,
        }))
    }

    /// The secret as 64 hex digits, as the launcher exports it.
    pub fn secret_hex(secret: &[u8; 32]) -> String {
        secret.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_round_trips_and_rejects_bad_hex() {
        let s: [u8; 32] = core::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(parse_secret(&JobEnv::secret_hex(&s)).unwrap(), s);
        assert!(parse_secret("abc").is_err());
        assert!(parse_secret(&"zz".repeat(32)).is_err());
    }

    /// Before, a value of 64 bytes with a multi-byte character panicked on
    /// a slice inside the character.
    #[test]
    fn a_non_ascii_secret_is_an_error_not_a_panic() {
        for bad in [format!("é{}", "a".repeat(62)), format!("{}é", "0".repeat(62)), "ü".repeat(32), format!("+1{}", "0".repeat(62))] {
            let e = parse_secret(&bad).expect_err("not hex");
            assert!(e.to_string().contains("64 hex digits"), "{e}");
        }
    }

    #[test]
    fn a_parent_port_secret_follows_the_job_secret_on_the_pipe() {
        let (job, port): ([u8; 32], [u8; 32]) = (core::array::from_fn(|i| i as u8), core::array::from_fn(|i| 200 - i as u8));
        let line = format!("{} {}\n", JobEnv::secret_hex(&job), JobEnv::secret_hex(&port));
        let (fd, _) = pipe_with(line.as_bytes(), true);
        assert_eq!(read_secret_fd(&fd.to_string(), 2, Duration::from_secs(5)).unwrap(), vec![job, port]);
        // A pipe with only the job secret, when a second was expected.
        let (fd, _) = pipe_with(format!("{}\n", JobEnv::secret_hex(&job)).as_bytes(), true);
        let e = read_secret_fd(&fd.to_string(), 2, Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("64 of 128"), "{e}");
    }

    /// A pipe whose read end is returned as a raw descriptor (left open).
    fn pipe_with(bytes: &[u8], close_writer: bool) -> (i32, Option<File>) {
        let mut fds = [0i32; 2];
        // SAFETY: two ints for pipe(2) to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the write end is ours alone.
        let mut w = unsafe { File::from_raw_fd(fds[1]) };
        std::io::Write::write_all(&mut w, bytes).unwrap();
        (fds[0], (!close_writer).then_some(w))
    }

    #[test]
    fn the_secret_is_read_from_a_pipe_once() {
        let s: [u8; 32] = core::array::from_fn(|i| (i * 3 + 1) as u8);
        let (fd, _) = pipe_with(format!("{}\n", JobEnv::secret_hex(&s)).as_bytes(), true);
        assert_eq!(read_secret_fd(&fd.to_string(), 1, Duration::from_secs(5)).unwrap(), vec![s]);
    }

    #[test]
    fn a_short_or_silent_pipe_fails_in_bounded_time() {
        let (fd, _) = pipe_with(b"abcd", true);
        let e = read_secret_fd(&fd.to_string(), 1, Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("closed after 4 of 64"), "{e}");
        let (fd, writer) = pipe_with(b"", false);
        let t = Instant::now();
        let e = read_secret_fd(&fd.to_string(), 1, Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("no secret"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3));
        drop(writer);
        for bad in ["x", "-1", "0", "2"] {
            assert!(read_secret_fd(bad, 1, Duration::from_millis(10)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_regular_file_is_not_taken_for_the_secret_pipe() {
        let f = File::open("/proc/self/stat").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let e = read_secret_fd(&fd.to_string(), 1, Duration::from_millis(10)).unwrap_err();
        assert!(e.to_string().contains("not a pipe"), "{e}");
    }
}
