//! The key/value service the launcher runs on a thread for one job.
//!
//! One thread accepts connections; each connection gets a thread that first
//! checks the peer's proof of the job secret (see `auth`), then serves its
//! requests. Things the launcher must act on (an abort, a finalize, a lost
//! peer, a refused stray) are handed to the `sink` callback as
//! [`ServerEvent`]s. What a stranger can cost before proving the secret is
//! bounded (`limits`): connections and threads, log lines, and a failing
//! `accept` (EMFILE) backs off instead of spinning.

mod agree;
mod conn;
mod limits;
mod state;

use crate::addr::{BootstrapAddr, Stream};
use crate::BootstrapError;
use state::Shared;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the service needs to know about the job.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub size: u32,
    pub secret: [u8; 32],
    /// How long a rank may wait at a fence for the others.
    pub fence_timeout: Duration,
    /// How long a new connection has to prove the secret.
    pub hello_timeout: Duration,
    /// For a TCP service bound to a wildcard address: the host name ranks
    /// should connect to (a specific bound address is advertised as it is).
    pub advertise_host: Option<String>,
    /// Connections proving the secret at once; a new one past this cuts the
    /// oldest short. Threads for them: at most twice this.
    pub max_handshakes: usize,
    /// A TCP service asked for port 0 takes a port in this range
    /// (`mpirun --port-range`); None: any free port.
    pub port_range: Option<crate::PortRange>,
}

/// Default [`ServerConfig::max_handshakes`]: far more than ranks connecting
/// at once need (each proves the secret in one round trip), few threads.
pub const MAX_HANDSHAKES: usize = 64;

impl ServerConfig {
    pub fn new(size: u32, secret: [u8; 32]) -> ServerConfig {
        ServerConfig {
            size,
            secret,
            fence_timeout: crate::timeout_from_env(),
            hello_timeout: Duration::from_secs(10),
            advertise_host: None,
            max_handshakes: MAX_HANDSHAKES,
            port_range: None,
        }
    }
}

/// Something the launcher should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// A rank proved the secret (it called MPI init).
    Connected { rank: u32 },
    /// A connection failed the handshake and was closed.
    Refused { peer: String, reason: String },
    /// So many connections failed that these `count` were only counted
    /// (a flood); see `limits`.
    RefusedMore { count: u64 },
    /// A rank asked to end the job.
    Abort { rank: u32, code: i32, message: String },
    /// A rank finished MPI cleanly.
    Finalized { rank: u32 },
    /// A rank lost contact with another.
    PeerLost { reporter: u32, rank: u32, reason: String },
    /// A rank asked for more processes (MPI_Comm_spawn): they connect back
    /// to `request.port`, which also hears of a failed start.
    Spawn { rank: u32, request: crate::SpawnRequest },
    /// A fence failed for lack of ranks.
    FenceTimeout { rank: u32, missing: Vec<u32> },
}

pub type Sink = Box<dyn Fn(ServerEvent) + Send + Sync>;

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// Puts entries in a running service's table (see `Server::notes`); ranks
/// read them with `get` at once, without a fence.
#[derive(Clone)]
pub struct Notes(Arc<Shared>);

impl Notes {
    pub fn put(&self, key: &str, value: &str) -> Result<(), BootstrapError> {
        crate::proto::check_item("key", key)?;
        crate::proto::check_item("value", value)?;
        self.0.put(key.to_string(), value.to_string());
        Ok(())
    }
}

/// Tells a running service's ranks of deaths (see `Server::deaths`).
#[derive(Clone)]
pub struct Deaths(Arc<Shared>);

impl Deaths {
    /// The launcher saw `rank`'s process end without finishing MPI cleanly:
    /// every connected rank gets a `dead` push naming it (`reason` should
    /// name the rank, its host and the cause), and ULFM agreements waiting
    /// for it end without it.
    pub fn died(&self, rank: u32, reason: &str) {
        self.0.died(rank, &crate::proto::one_line(reason));
    }
}

/// A running service. Dropping it stops it and removes its socket file.
pub struct Server {
    address: String,
    wake: BootstrapAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    unix_path: Option<PathBuf>,
    /// The UDP reflector on the TCP service's port number (reflect.rs);
    /// None over a unix socket or when that UDP port is taken.
    reflector: Option<crate::reflect::Reflector>,
}

impl Server {
    /// Binds `bind` (for TCP, port 0 picks a free port, in
    /// `config.port_range` if set) and starts serving.
    pub fn start(bind: &BootstrapAddr, config: ServerConfig, sink: Sink) -> Result<Server, BootstrapError> {
        let (listener, address, wake, unix_path) = match bind {
            BootstrapAddr::Unix(path) => {
                let l = UnixListener::bind(path)?;
                (Listener::Unix(l), bind.render(), bind.clone(), Some(path.clone()))
            }
            BootstrapAddr::Tcp(host, port) => {
                let l = match port {
                    0 => crate::ports::bind_in(config.port_range, |p| TcpListener::bind((host.as_str(), p)))?,
                    _ => TcpListener::bind((host.as_str(), *port))?,
                };
                let local = l.local_addr()?;
                let wildcard = local.ip().is_unspecified();
                let shown = match (&config.advertise_host, wildcard) {
                    (_, false) => local.ip().to_string(),
                    (Some(h), true) => h.clone(),
                    (None, true) => return Err(BootstrapError::BadAddress(bind.render(), "a wildcard address needs an advertised host".into())),
                };
                let wake_ip = if wildcard { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { local.ip() };
                let address = BootstrapAddr::Tcp(shown, local.port()).render();
                (Listener::Tcp(l), address, BootstrapAddr::Tcp(wake_ip.to_string(), local.port()), None)
            }
        };
        // Best effort: without it ranks publish no reflexive candidate.
        let reflector = match &listener {
            Listener::Tcp(l) => l.local_addr().ok().and_then(|a| crate::reflect::Reflector::start(a, config.secret).ok()),
            Listener::Unix(_) => None,
        };
        let shared = Arc::new(Shared::new(config, sink));
        let s2 = shared.clone();
        let accept = std::thread::Builder::new().name("wanmpi-kv-accept".into()).spawn(move || accept_loop(listener, s2))?;
        Ok(Server { address, wake, shared, accept: Some(accept), unix_path, reflector })
    }

    /// The address ranks connect to, in the `WANMPI_BOOTSTRAP` form.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// A handle that puts entries in the job's table from outside (the
    /// launcher's notes to its ranks, such as why a spawn failed).
    pub fn notes(&self) -> Notes {
        Notes(self.shared.clone())
    }

    /// A handle to report ranks' deaths to the others.
    pub fn deaths(&self) -> Deaths {
        Deaths(self.shared.clone())
    }

    /// Where the UDP reflector answers, if it runs (reflect.rs).
    pub fn reflector_addr(&self) -> Option<std::net::SocketAddr> {
        self.reflector.as_ref().map(|r| r.local_addr())
    }

    /// Ranks that have called finalize so far.
    pub fn finalized(&self) -> Vec<u32> {
        self.shared.finalized()
    }

    /// Handshakes cut short so far to make room for newer connections.
    pub fn handshakes_cut(&self) -> u64 {
        self.shared.handshakes.cut()
    }

    /// Threads serving connections that have not proved the secret yet.
    pub fn handshake_threads(&self) -> usize {
        self.shared.handshakes.threads()
    }

    /// Stops accepting, fails pending fences and closes every connection.
    pub fn shutdown(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.end_all("the job is ending");
        self.shared.handshakes.cut_all();
        // The accept thread blocks in accept(); a connection wakes it.
        let _ = self.wake.connect(Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        if let Some(p) = self.unix_path.take() {
            let _ = std::fs::remove_file(p);
        }
        self.reflector = None;
        self.shared.refusals.flush(&self.shared.sink);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: Listener, shared: Arc<Shared>) {
    let mut failures: u32 = 0;
    loop {
        let stream = match &listener {
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }),
        };
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let s = match stream {
            Ok(s) => {
                failures = 0;
                s
            }
            // Transient errors (EMFILE, ENFILE, ENOBUFS, ECONNABORTED): keep
            // serving the job, but back off: a lasting one (out of
            // descriptors) would otherwise spin on a connection still queued.
            Err(e) => {
                if failures == 0 {
                    shared.refusals.refused(&shared.sink, "the listener".into(), format!("accept failed: {e}; backing off"));
                }
                std::thread::sleep(limits::accept_backoff(failures));
                failures = failures.saturating_add(1);
                continue;
            }
        };
        let Some(ticket) = shared.handshakes.admit(&s, Duration::from_secs(1)) else {
            shared.refusals.refused(&shared.sink, s.peer(), "dropped: every handshake thread is busy".into());
            continue;
        };
        let sh = shared.clone();
        // `serve` tells `handshakes` when its handshake is over.
        let spawned = std::thread::Builder::new().name("wanmpi-kv-conn".into()).spawn(move || conn::serve(s, &sh, &ticket));
        if let Err(e) = spawned {
            // The closure (and the stream) is gone; so is its ticket's thread.
            shared.handshakes.thread_ended();
            shared.refusals.refused(&shared.sink, "a new connection".into(), format!("no thread for it: {e}"));
        }
    }
}
