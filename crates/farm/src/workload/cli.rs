//! Farm flags shared by the workload binaries.

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::config::{FarmConfig, ProgressMode, ADAPTIVE_MAX_REQUESTS};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProgressArg {
    Auto,
    Bar,
    Lines,
    Off,
}

#[derive(Debug, Clone, Args)]
pub struct FarmArgs {
    /// Tasks per request (k, the papers' Fanout).
    #[arg(long, short = 'k', default_value_t = 1)]
    pub fanout: u32,
    /// Requests each worker keeps outstanding (MAXREQS); with --adaptive the
    /// most it may keep. Default 10, with --adaptive 40.
    #[arg(long)]
    pub max_requests: Option<u32>,
    /// Adapt each worker's depth to its measured RTT, loss stalls and task time.
    #[arg(long)]
    pub adaptive: bool,
    /// No end game (no fewer requests near the end, no re-issued copies).
    #[arg(long)]
    pub no_end_game: bool,
    /// Re-issue a task once it is out this many mean turnarounds.
    #[arg(long, default_value_t = 2.0)]
    pub reissue_factor: f64,
    /// Distinct task tags in flight (MaxWorkTags).
    #[arg(long, default_value_t = 4096)]
    pub max_tags: usize,
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    /// Seconds between plain progress lines.
    #[arg(long, default_value_t = 5.0)]
    pub progress_every: f64,
    /// Fail if nothing happens for this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub stall_timeout: f64,
    /// Split the manager: this rank (default 1) receives and processes the
    /// results, rank 0 only schedules (mpiBLAST's writer).
    #[arg(long, value_name = "RANK", num_args = 0..=1, default_missing_value = "1")]
    pub writer: Option<i32>,
}

impl FarmArgs {
    pub fn config(&self, max_task_bytes: usize, max_result_bytes: usize) -> FarmConfig {
        FarmConfig {
            fanout: self.fanout,
            max_requests: self.max_requests.unwrap_or(if self.adaptive { ADAPTIVE_MAX_REQUESTS } else { 10 }),
            adaptive: self.adaptive,
            end_game: !self.no_end_game,
            reissue_factor: self.reissue_factor,
            max_tags: self.max_tags,
            max_task_bytes,
            max_result_bytes,
            progress: match self.progress {
                ProgressArg::Auto => ProgressMode::Auto,
                ProgressArg::Bar => ProgressMode::Bar,
                ProgressArg::Lines => ProgressMode::Lines,
                ProgressArg::Off => ProgressMode::Off,
            },
            progress_interval: Duration::from_secs_f64(self.progress_every.max(0.1)),
            print_summary: true,
            stall_timeout: Duration::from_secs_f64(self.stall_timeout.max(1.0)),
            writer: self.writer,
        }
    }
}
