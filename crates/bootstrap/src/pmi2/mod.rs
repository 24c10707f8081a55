//! Started by Slurm's `srun --mpi=pmi2` instead of mpirun: the rank finds
//! `PMI_FD` (a socket to its slurmstepd), `PMI_RANK` and `PMI_SIZE` in its
//! environment and bootstraps through Slurm's key/value space with the
//! PMI-2 wire protocol (`wire`): `fullinit`, then `kvs-put` / `kvs-fence` /
//! `kvs-get` for what the transports publish, `finalize` at the end and
//! `abort` from MPI_Abort.
//!
//! What mpirun would hand out is made over these calls by `pmi_job`, as
//! under PMIx (`pmix`).
//!
//! Not supported under PMI-2: MPI_Comm_spawn (it needs mpirun).

mod wire;

pub use wire::Message;

use crate::{BootstrapError, JobEnv, KeyValue, SpawnRequest};
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

pub const ENV_PMI_FD: &str = "PMI_FD";
pub const ENV_PMI_RANK: &str = "PMI_RANK";
pub const ENV_PMI_SIZE: &str = "PMI_SIZE";

/// A rank's connection to its PMI-2 server.
pub struct Pmi2 {
    sock: UnixStream,
    rank: u32,
    size: u32,
    timeout: Duration,
}

fn bad_env(var: &'static str, problem: String) -> BootstrapError {
    BootstrapError::BadEnv { var, problem }
}

fn protocol(text: String) -> BootstrapError {
    BootstrapError::Protocol(format!("PMI-2: {text}"))
}

impl Pmi2 {
    /// Connects when the process was started with PMI-2 (`PMI_FD` set):
    /// the version handshake and `fullinit`. `Ok(None)` without `PMI_FD`.
    pub fn from_env() -> Result<Option<Pmi2>, BootstrapError> {
        let Some(fd_text) = std::env::var(ENV_PMI_FD).ok() else { return Ok(None) };
        let num = |var: &'static str| -> Result<u32, BootstrapError> {
            let v = std::env::var(var).map_err(|e| bad_env(var, e.to_string()))?;
            v.trim().parse().map_err(|_| bad_env(var, format!("{v:?} is not a number")))
        };
        let fd: i32 = fd_text.trim().parse().map_err(|_| bad_env(ENV_PMI_FD, format!("{fd_text:?} is not a descriptor")))?;
        let (rank, size) = (num(ENV_PMI_RANK)?, num(ENV_PMI_SIZE)?);
        if size == 0 || rank >= size {
            return Err(bad_env(ENV_PMI_RANK, format!("rank {rank} not below size {size}")));
        }
        // SAFETY: fstat fills the zeroed struct; a bad descriptor is an error.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if fd < 3 || unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(bad_env(ENV_PMI_FD, format!("descriptor {fd} is not an open socket")));
        }
        // Programs the rank starts must not inherit the job's PMI socket.
        // SAFETY: plain fcntl on a descriptor checked above.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        // SAFETY: the process manager gave this process the socket for PMI
        // alone; the stream owns it from here on.
        let sock = unsafe { UnixStream::from_raw_fd(fd) };
        Pmi2::connect(sock, rank, size, crate::timeout_from_env()).map(Some)
    }

    /// The handshake and `fullinit` over `sock`, every wait for an answer
    /// bounded by `timeout`.
    pub fn connect(sock: UnixStream, rank: u32, size: u32, timeout: Duration) -> Result<Pmi2, BootstrapError> {
        sock.set_read_timeout(Some(timeout))?;
        let mut p = Pmi2 { sock, rank, size, timeout };
        p.handshake()?;
        Ok(p)
    }

    fn handshake(&mut self) -> Result<(), BootstrapError> {
        self.sock.write_all(wire::INIT_LINE.as_bytes())?;
        // The answer is one PMI-1 line; read it byte by byte so nothing
        // after it is taken.
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.last() != Some(&b'\n') && line.len() < 256 {
            match self.sock.read(&mut byte) {
                Ok(0) => return Err(protocol("the process manager closed PMI_FD during init".into())),
                Ok(_) => line.push(byte[0]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e, "the PMI init answer")),
            }
        }
        wire::check_init_reply(&String::from_utf8_lossy(&line)).map_err(protocol)?;
        let (rank, jobid) = (self.rank.to_string(), std::env::var("PMI_JOBID").unwrap_or_else(|_| "0".into()));
        let reply = self.call(Message::new("fullinit", &[("pmijobid", &jobid), ("pmirank", &rank), ("threaded", "FALSE")]), "fullinit-response")?;
        let said = |k| reply.get(k).and_then(|v| v.parse::<u32>().ok());
        if said("rank").is_some_and(|r| r != self.rank) || said("size").is_some_and(|s| s != self.size) {
            return Err(protocol(format!(
                "fullinit says rank {:?} of {:?}, the environment {} of {}",
                said("rank"),
                said("size"),
                self.rank,
                self.size
            )));
        }
        Ok(())
    }

    fn io_error(&self, e: std::io::Error, what: &str) -> BootstrapError {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => BootstrapError::Timeout(self.timeout, what.to_string()),
            _ => BootstrapError::Io(e),
        }
    }

    fn send(&mut self, m: &Message) -> Result<(), BootstrapError> {
        let bytes = m.encode().map_err(protocol)?;
        self.sock.write_all(&bytes)?;
        Ok(())
    }

    /// Sends `m` and reads the reply, which must be `want` with rc 0.
    fn call(&mut self, m: Message, want: &str) -> Result<Message, BootstrapError> {
        self.send(&m)?;
        let mut len = [0u8; wire::LENGTH_FIELD];
        self.sock.read_exact(&mut len).map_err(|e| self.io_error(e, want))?;
        let mut body = vec![0u8; wire::parse_length(&len).map_err(protocol)?];
        self.sock.read_exact(&mut body).map_err(|e| self.io_error(e, want))?;
        let reply = wire::parse(&body).map_err(protocol)?;
        if reply.cmd != want {
            return Err(protocol(format!("expected {want}, got {}", reply.cmd)));
        }
        if reply.rc() != 0 {
            return Err(protocol(format!("{} failed with rc={}: {}", m.cmd, reply.rc(), reply.get("errmsg").unwrap_or("no message"))));
        }
        Ok(reply)
    }

    /// What mpirun would give the rank (`pmi_job::job_env`): the job
    /// environment and the host map.
    pub fn job_env(&mut self) -> Result<(JobEnv, String), BootstrapError> {
        crate::pmi_job::job_env(self, "pmi2")
    }
}

impl KeyValue for Pmi2 {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.call(Message::new("kvs-put", &[("key", key), ("value", value)]), "kvs-put-response").map(|_| ())
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.call(Message::new("kvs-fence", &[]), "kvs-fence-response").map(|_| ())
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        let r = self.call(Message::new("kvs-get", &[("jobid", ""), ("srcid", "-1"), ("key", key)]), "kvs-get-response")?;
        match (r.get("found"), r.get("value")) {
            (Some(f), Some(v)) if f.eq_ignore_ascii_case("TRUE") => Ok(v.to_string()),
            _ => Err(BootstrapError::Missing(key.to_string())),
        }
    }
}

impl crate::Launcher for Pmi2 {
    fn finalize(&mut self) -> Result<(), BootstrapError> {
        self.call(Message::new("finalize", &[]), "finalize-response").map(|_| ())
    }
    fn abort(&mut self, _code: i32, message: &str) -> Result<(), BootstrapError> {
        // No answer comes: Slurm ends the step.
        let msg: String = message.replace(';', ",").chars().take(900).collect();
        self.send(&Message::new("abort", &[("isworld", "TRUE"), ("msg", &msg)]))
    }
    fn spawn(&mut self, _request: &SpawnRequest) -> Result<(), BootstrapError> {
        Err(protocol("MPI_Comm_spawn is not supported under srun --mpi=pmi2; start the job with mpirun".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// What the ranks of one scripted job share: the key/value space and
    /// the fences.
    #[derive(Clone)]
    struct Space {
        kvs: std::sync::Arc<std::sync::Mutex<HashMap<String, String>>>,
        fence: std::sync::Arc<std::sync::Barrier>,
        size: u32,
    }

    impl Space {
        fn new(size: u32) -> Space {
            Space { kvs: Default::default(), fence: std::sync::Arc::new(std::sync::Barrier::new(size as usize)), size }
        }
    }

    /// A PMI-2 server for one rank, as Slurm's answers it; `refuse` names a
    /// command it answers with rc=14.
    fn serve(sock: UnixStream, refuse: &'static str) {
        serve_in(sock, refuse, Space::new(1))
    }

    fn serve_in(mut sock: UnixStream, refuse: &'static str, space: Space) {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while line.last() != Some(&b'\n') {
            if sock.read(&mut b).unwrap_or(0) == 0 {
                return;
            }
            line.push(b[0]);
        }
        assert_eq!(line, wire::INIT_LINE.as_bytes());
        sock.write_all(b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n").unwrap();
        let size = space.size.to_string();
        loop {
            let mut len = [0u8; wire::LENGTH_FIELD];
            if sock.read_exact(&mut len).is_err() {
                return;
            }
            let mut body = vec![0u8; wire::parse_length(&len).unwrap()];
            sock.read_exact(&mut body).unwrap();
            let m = wire::parse(&body).unwrap();
            let rc = if m.cmd == refuse { "14" } else { "0" };
            let reply = match m.cmd.as_str() {
                "fullinit" => {
                    Message::new("fullinit-response", &[("rc", rc), ("rank", m.get("pmirank").unwrap()), ("size", &size), ("appnum", "-1")])
                }
                "kvs-put" => {
                    space.kvs.lock().unwrap().insert(m.get("key").unwrap().into(), m.get("value").unwrap().into());
                    Message::new("kvs-put-response", &[("rc", rc), ("errmsg", "full")])
                }
                "kvs-fence" => {
                    space.fence.wait();
                    Message::new("kvs-fence-response", &[("rc", rc)])
                }
                "kvs-get" => match space.kvs.lock().unwrap().get(m.get("key").unwrap()).cloned() {
                    Some(v) => Message::new("kvs-get-response", &[("rc", rc), ("found", "TRUE"), ("value", &v)]),
                    None => Message::new("kvs-get-response", &[("rc", rc), ("found", "FALSE")]),
                },
                "finalize" => Message::new("finalize-response", &[("rc", rc)]),
                other => panic!("unexpected {other}"),
            };
            sock.write_all(&reply.encode().unwrap()).unwrap();
        }
    }

    fn client(refuse: &'static str) -> Result<Pmi2, BootstrapError> {
        let (a, b) = UnixStream::pair().unwrap();
        std::thread::spawn(move || serve(b, refuse));
        Pmi2::connect(a, 0, 1, Duration::from_secs(5))
    }

    #[test]
    fn a_rank_gets_its_job_environment_and_exchanges_keys() {
        let mut p = client("").unwrap();
        let (env, map) = p.job_env().unwrap();
        assert_eq!((env.rank, env.size, map.as_str()), (0, 1, "0"));
        assert!(env.job_id.contains('-'), "{}", env.job_id);
        assert_ne!(env.secret, [0u8; 32]);
        p.put("ep.0", "tcp:198.18.0.1:5000").unwrap();
        p.fence().unwrap();
        assert_eq!(p.get("ep.0").unwrap(), "tcp:198.18.0.1:5000");
        assert!(matches!(p.get("nobody"), Err(BootstrapError::Missing(k)) if k == "nobody"));
        crate::Launcher::finalize(&mut p).unwrap();
    }

    /// Three ranks share one secret, and Slurm's key/value space never
    /// holds it in clear (before, `wanmpi-secret` held it as hex).
    #[test]
    fn ranks_share_a_secret_that_never_crosses_slurm_in_clear() {
        let space = Space::new(3);
        let ranks: Vec<_> = (0..3u32)
            .map(|r| {
                let (a, b) = UnixStream::pair().unwrap();
                let sp = space.clone();
                std::thread::spawn(move || serve_in(b, "", sp));
                std::thread::spawn(move || {
                    let mut p = Pmi2::connect(a, r, 3, Duration::from_secs(10)).unwrap();
                    p.job_env().unwrap()
                })
            })
            .collect();
        let envs: Vec<(JobEnv, String)> = ranks.into_iter().map(|t| t.join().unwrap()).collect();
        let secret = envs[0].0.secret;
        assert!(envs.iter().all(|(e, _)| e.secret == secret && e.job_id == envs[0].0.job_id), "one secret, one job");
        assert_eq!(envs.iter().map(|(e, _)| e.rank).collect::<Vec<_>>(), vec![0, 1, 2]);
        let hex = JobEnv::secret_hex(&secret);
        for (k, v) in space.kvs.lock().unwrap().iter() {
            assert!(!v.contains(&hex[..16]) && !k.contains(&hex[..16]), "{k}={v} holds the secret");
        }
    }

    #[test]
    fn a_refusal_is_an_error_that_says_so() {
        let mut p = client("kvs-put").unwrap();
        let e = p.put("k", "v").unwrap_err().to_string();
        assert!(e.contains("kvs-put failed with rc=14: full"), "{e}");
        assert!(client("fullinit").is_err());
    }

    #[test]
    fn a_silent_server_times_out() {
        let (a, _b) = UnixStream::pair().unwrap();
        let t = std::time::Instant::now();
        let e = Pmi2::connect(a, 0, 1, Duration::from_millis(200)).err().unwrap();
        assert!(matches!(e, BootstrapError::Timeout(..)), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
