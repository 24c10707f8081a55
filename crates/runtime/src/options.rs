//! Runtime options, read from the environment the launcher sets (mpirun's
//! flags export them). Each has a documented default.

use std::time::Duration;
use wanmpi_engine::{EngineConfig, ErrorClass, MpiError, MpiResult};

#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    pub engine: EngineConfig,
    /// WANMPI_PROGRESS_THREAD=1 or 0: a thread keeps messages moving while
    /// the application computes. Unset (None): the transport's choice
    /// (`Transport::wants_progress_thread`: wamp with a far peer).
    pub progress_thread: Option<bool>,
    /// How long the progress thread sleeps on the transport when idle
    /// (WANMPI_PROGRESS_INTERVAL_US, default 1000 µs; arrivals wake it).
    pub progress_interval: Duration,
    /// Progress rounds a blocking call spins before sleeping on the transport
    /// (WANMPI_SPIN_ROUNDS, default 2000; 0 sleeps at once).
    pub spin_rounds: u32,
    /// This host runs more ranks than the process has CPUs (known at
    /// MPI_Init from the launcher's host map): idle spins yield the CPU
    /// every round instead of after the first few hundred.
    pub oversubscribed: bool,
    /// This host runs more than `CROWDED_HOST` ranks (`apply_crowding`):
    /// single copy is on, from `CROWDED_SINGLE_COPY_FROM`, so that the
    /// shared-memory rings between every pair carry only short messages.
    pub crowded: bool,
    /// WANMPI_TOLERATE_RANK_FAILURE=1 (mpirun --tolerate-rank-failure): a lost
    /// peer fails only the operations that involve it (MPIX_ERR_PROC_FAILED)
    /// instead of ending the job.
    pub tolerate_rank_failure: bool,
    /// WANMPI_STATS=1: print the engine's and transport's counters at finalize.
    pub print_stats: bool,
    /// WANMPI_WAN_WINDOW: receive buffer granted to each far peer for long
    /// messages sent before their receive is posted (`wan.rs`; default
    /// 16 MiB within `wan_buffer`, 0 turns the window off: rendezvous as to
    /// a near peer). 4 MiB was too little: a farm worker at 80 ms spent it
    /// before its connection's rate ramped up, fell back to rendezvous, and
    /// the manager paid a round trip per result (docs/benchmarks.md at
    /// commit 52d70dc, section 23; today's farm: "WAN farm").
    pub wan_window: u64,
    /// WANMPI_WAN_BUFFER: all far peers' windows together at most (default
    /// 64 MiB): with many ranks each gets a smaller share.
    pub wan_buffer: u64,
    /// WANMPI_WAN_PEERS: which peers get a WAN window: `far` (default: those
    /// measured at least `FAR_RTT` away), `all` (also near ones, and peers a
    /// transport cannot measure, e.g. sctp), `none`.
    pub wan_peers: WanPeers,
    /// Single copy between ranks of one host (`local_read.rs`): long
    /// messages read out of the sender rather than copied through the
    /// shared-memory ring. WANMPI_SHM_CMA=0 or 1 (or a threshold set with
    /// WANMPI_SHM_CMA_FROM, `engine.single_copy_from`) decides; unset
    /// (None), it is on only where the host runs more ranks than a rank
    /// has CPUs (`oversubscribed`, measured: docs/benchmarks.md "One host") or
    /// is crowded (`crowded`: memory, docs/benchmarks.md "Memory").
    pub single_copy: Option<bool>,
    /// Names this job among jobs that join (dynamic processes): equal in
    /// all its processes, different from other jobs'. `Runtime::init`
    /// takes the launcher's job id (a singleton makes one up); runtimes
    /// made by `Runtime::over` without one are one job together.
    pub job: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WanPeers {
    Far,
    All,
    None,
}

impl WanPeers {
    fn from_env() -> MpiResult<WanPeers> {
        match std::env::var("WANMPI_WAN_PEERS").as_deref().map(str::trim) {
            Err(_) | Ok("far") => Ok(WanPeers::Far),
            Ok("all") => Ok(WanPeers::All),
            Ok("none") => Ok(WanPeers::None),
            Ok(v) => Err(MpiError::new(ErrorClass::Arg, format!("WANMPI_WAN_PEERS={v:?}: expected far, all or none"))),
        }
    }
}

/// Whether this host runs more ranks than this process has CPUs to run
/// on. A spinning rank then holds a CPU that the rank it waits for needs,
/// so blocking calls give the CPU away on every idle round (`wait_until`).
pub fn oversubscribed(ranks_on_host: usize, cpus: usize) -> bool {
    ranks_on_host > cpus
}

/// More ranks than this on one host make it crowded. An all-to-all
/// writes into every ring of the host, and a ring keeps the pages its
/// longest message touched: at 128 ranks, 1 B to 64 KiB per peer left
/// 3.2 GiB of rings written (docs/benchmarks.md "Memory"); at 64 ranks 0.5 GiB.
pub const CROWDED_HOST: usize = 64;
/// Where single copy starts on a crowded host (unless WANMPI_SHM_CMA_FROM
/// says otherwise): the rings then carry messages below 16 KiB, a ring
/// keeps at most about 20 KiB, and a 128-rank all-to-all fits in well
/// under 1 GiB. Open MPI's vader reads messages above 4 KiB the same way.
pub const CROWDED_SINGLE_COPY_FROM: usize = 16 << 10;

impl RuntimeOptions {
    /// Marks a host of `ranks_on_host` ranks crowded when it is, and then
    /// lowers the single-copy threshold unless the user set one.
    pub fn apply_crowding(&mut self, ranks_on_host: usize) {
        self.crowded = ranks_on_host > CROWDED_HOST;
        if self.crowded && std::env::var_os("WANMPI_SHM_CMA_FROM").is_none() {
            self.engine.single_copy_from = self.engine.single_copy_from.min(CROWDED_SINGLE_COPY_FROM);
        }
    }

    /// Polls an express receive (`express.rs`) may spend on one peer: one
    /// look at least (a message already there costs no spin), no more than
    /// a blocking call may spin, and only that look on a host with more
    /// ranks than CPUs (a spin without yielding holds the CPU the sender
    /// needs).
    pub(crate) fn express_rounds(&self) -> u32 {
        if self.oversubscribed {
            1
        } else {
            crate::express::EXPRESS_ROUNDS.min(self.spin_rounds).max(1)
        }
    }
}

fn env_num(name: &str, default: u64) -> MpiResult<u64> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| MpiError::new(ErrorClass::Arg, format!("{name}={v:?} is not a number"))),
        Err(_) => Ok(default),
    }
}

fn env_bool(name: &str) -> bool {
    matches!(std::env::var(name).as_deref().map(str::trim), Ok("1" | "true" | "yes" | "on"))
}

/// Every option at its documented default (what an empty environment gives).
impl Default for RuntimeOptions {
    fn default() -> RuntimeOptions {
        RuntimeOptions {
            engine: EngineConfig::default(),
            progress_thread: None,
            progress_interval: Duration::from_micros(1000),
            spin_rounds: 2000,
            oversubscribed: false,
            crowded: false,
            job: None,
            tolerate_rank_failure: false,
            print_stats: false,
            wan_window: 16 << 20,
            wan_buffer: 64 << 20,
            wan_peers: WanPeers::Far,
            single_copy: None,
        }
    }
}

impl RuntimeOptions {
    pub fn from_env() -> MpiResult<RuntimeOptions> {
        let d = EngineConfig::default();
        Ok(RuntimeOptions {
            engine: EngineConfig {
                eager_limit: env_num("WANMPI_EAGER_LIMIT", d.eager_limit as u64)? as usize,
                recv_credits: std::env::var("WANMPI_RECV_CREDITS").map(|v| v != "0").unwrap_or(d.recv_credits),
                single_copy_from: env_num("WANMPI_SHM_CMA_FROM", d.single_copy_from as u64)? as usize,
            },
            progress_thread: std::env::var_os("WANMPI_PROGRESS_THREAD").map(|_| env_bool("WANMPI_PROGRESS_THREAD")),
            progress_interval: Duration::from_micros(env_num("WANMPI_PROGRESS_INTERVAL_US", 1000)?),
            spin_rounds: env_num("WANMPI_SPIN_ROUNDS", 2000)? as u32,
            oversubscribed: false,
            crowded: false,
            tolerate_rank_failure: env_bool("WANMPI_TOLERATE_RANK_FAILURE"),
            print_stats: env_bool("WANMPI_STATS"),
            wan_window: env_num("WANMPI_WAN_WINDOW", 16 << 20)?,
            wan_buffer: env_num("WANMPI_WAN_BUFFER", 64 << 20)?,
            wan_peers: WanPeers::from_env()?,
            single_copy: match std::env::var("WANMPI_SHM_CMA") {
                Ok(v) => Some(v.trim() != "0"),
                Err(_) => std::env::var_os("WANMPI_SHM_CMA_FROM").map(|_| true),
            },
            job: None,
        })
    }
}

#[cfg(test)]
mod spin_tests {
    use super::oversubscribed;

    #[test]
    fn a_crowded_host_reads_messages_from_16_kib() {
        let mut o = super::RuntimeOptions::default();
        o.apply_crowding(super::CROWDED_HOST);
        assert!(!o.crowded);
        assert_eq!(o.engine.single_copy_from, wanmpi_engine::EngineConfig::default().single_copy_from);
        o.apply_crowding(super::CROWDED_HOST + 1);
        assert!(o.crowded);
        assert_eq!(o.engine.single_copy_from, super::CROWDED_SINGLE_COPY_FROM);
    }

    #[test]
    fn more_ranks_than_cpus_is_oversubscribed() {
        assert!(!oversubscribed(2, 2));
        assert!(!oversubscribed(1, 8));
        assert!(oversubscribed(8, 2));
    }
}
