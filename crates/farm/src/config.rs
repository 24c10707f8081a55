//! Farm settings.

use std::time::Duration;

/// How the manager shows progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A bar on a terminal, plain periodic lines otherwise.
    #[default]
    Auto,
    Bar,
    Lines,
    Off,
}

#[derive(Debug, Clone)]
pub struct FarmConfig {
    /// Tasks asked for per request (the papers' batching / Fanout, `k`).
    pub fanout: u32,
    /// Requests a worker keeps outstanding (MAXREQS). A worker keeps at most
    /// `max_requests * fanout` tasks requested or buffered.
    pub max_requests: u32,
    /// Adapt the depth to measured RTT, loss stalls and task time (within
    /// 1..=`max_requests * fanout`; see [`crate::depth`]). Covering a
    /// timeout stall takes ~30 tasks of 24 ms at 160 ms RTT, so raise
    /// `max_requests` with it: [`ADAPTIVE_MAX_REQUESTS`] is what the
    /// binaries use.
    pub adaptive: bool,
    /// Near the end ask for fewer tasks, and hand tasks held by a slow
    /// worker to idle ones (first result wins).
    pub end_game: bool,
    /// A task is re-issued only when it has been out this many times longer
    /// than the mean time from issue to result so far.
    pub reissue_factor: f64,
    /// Distinct task tags in flight (the Bulk Processor Farm's MaxWorkTags).
    pub max_tags: usize,
    /// Largest task and result, in bytes (workers pre-post receives this big).
    pub max_task_bytes: usize,
    pub max_result_bytes: usize,
    pub progress: ProgressMode,
    /// Seconds between plain progress lines.
    pub progress_interval: Duration,
    /// Print the per-worker table and predicted vs measured at the end.
    pub print_summary: bool,
    /// The farm fails if nothing at all happens for this long.
    pub stall_timeout: Duration,
    /// Split the manager (mpiBLAST): `Some(r)` makes rank `r` (>= 1) the
    /// writer, which receives every result and runs `process_result`,
    /// while rank 0 (the scheduler) creates and hands out tasks. `None`
    /// (the default): rank 0 does both. Every process must pass the same.
    pub writer: Option<i32>,
}

/// The cap the binaries give `max_requests` under `--adaptive` unless told
/// otherwise: enough for a retransmission timeout stall (a few hundred ms)
/// plus 160 ms of RTT over 24 ms tasks, which needs about 30.
pub const ADAPTIVE_MAX_REQUESTS: u32 = 40;

impl Default for FarmConfig {
    fn default() -> Self {
        FarmConfig {
            fanout: 1,
            max_requests: 10,
            adaptive: false,
            end_game: true,
            reissue_factor: 2.0,
            max_tags: 4096,
            max_task_bytes: 1 << 20,
            max_result_bytes: 1 << 20,
            progress: ProgressMode::Auto,
            progress_interval: Duration::from_secs(5),
            print_summary: true,
            stall_timeout: Duration::from_secs(600),
            writer: None,
        }
    }
}

impl FarmConfig {
    pub(crate) fn check(&self) -> Result<(), crate::FarmError> {
        let bad = |s: &str| Err(crate::FarmError::Config(s.into()));
        if self.fanout == 0 || self.max_requests == 0 {
            return bad("fanout and max_requests must be at least 1");
        }
        if self.max_tags == 0 {
            return bad("max_tags must be at least 1");
        }
        if self.reissue_factor.is_nan() || self.reissue_factor <= 0.0 {
            return bad("reissue_factor must be positive");
        }
        Ok(())
    }
    /// Checks the settings that depend on the communicator's size.
    pub(crate) fn check_size(&self, size: i32) -> Result<(), crate::FarmError> {
        if size < 2 {
            return Err(crate::FarmError::TooFewProcesses(size));
        }
        if let Some(w) = self.writer {
            if w < 1 || w >= size {
                return Err(crate::FarmError::Config(format!("writer rank {w} is not a rank 1..{} of the farm's {size} processes", size - 1)));
            }
            if size < 3 {
                return Err(crate::FarmError::Config(format!(
                    "a writer rank needs at least 3 processes (scheduler, writer, a worker); this communicator has {size}"
                )));
            }
        }
        Ok(())
    }
    /// The ranks that work: all but rank 0 and the writer.
    pub fn worker_ranks(&self, size: i32) -> Vec<i32> {
        (1..size).filter(|r| Some(*r) != self.writer).collect()
    }
    /// The rank where results are processed.
    pub fn results_rank(&self) -> i32 {
        self.writer.unwrap_or(0)
    }
    /// Tasks a worker may hold requested or buffered.
    pub fn max_depth(&self) -> u32 {
        self.max_requests.saturating_mul(self.fanout)
    }

    /// Tasks the manager sends each worker unasked at the start, for which
    /// the worker posts receives before it asks for anything: what a
    /// worker would ask for first (its depth before any measurement is the
    /// most it may hold), without the request's one-way trip. Every rank
    /// must run the farm with the same configuration.
    pub fn first_demand(&self) -> u32 {
        self.max_depth()
    }
}
