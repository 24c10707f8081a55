//! The synthetic farm of paper 000 §3.3: by default 5000 tasks of 12 KiB,
//! results of the same size, 24 ms of (sleeping) compute per task; run it
//! with 8 ranks (7 workers) as in the paper. Every size, time and farm
//! setting is a flag, so tests run tiny versions.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use wanmpi_farm::workload::{cli::FarmArgs, synthetic};

#[derive(Parser, Debug)]
#[command(name = "farm-synthetic", about = "The synthetic task farm of paper 000 §3.3 (run under mpirun)")]
struct Cli {
    #[arg(long, default_value_t = 5000)]
    tasks: u64,
    /// Task size in bytes (the paper: 12288 and 131072).
    #[arg(long, default_value_t = 12288)]
    task_bytes: usize,
    /// Result size in bytes (default: the task size).
    #[arg(long)]
    result_bytes: Option<usize>,
    /// Sizes vary by up to this fraction either way, per task.
    #[arg(long, default_value_t = 0.0)]
    size_jitter: f64,
    /// Compute time per task in milliseconds.
    #[arg(long, default_value_t = 24.0)]
    task_ms: f64,
    /// Compute times vary by up to this fraction either way, per task.
    #[arg(long, default_value_t = 0.0)]
    time_jitter: f64,
    /// Compute by spinning the CPU instead of sleeping.
    #[arg(long)]
    busy: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Test hook: this rank computes --slow-factor times slower.
    #[arg(long)]
    slow_rank: Option<i32>,
    #[arg(long, default_value_t = 10.0)]
    slow_factor: f64,
    /// Test hook: this rank SIGKILLs itself after --die-after tasks.
    #[arg(long)]
    die_rank: Option<i32>,
    #[arg(long, default_value_t = 5)]
    die_after: u64,
    #[command(flatten)]
    farm: FarmArgs,
}

fn main() -> ExitCode {
    let c = Cli::parse();
    let spec = synthetic::Spec {
        tasks: c.tasks,
        task_bytes: c.task_bytes,
        result_bytes: c.result_bytes.unwrap_or(c.task_bytes),
        size_jitter: c.size_jitter.clamp(0.0, 0.95),
        task_time: Duration::from_secs_f64(c.task_ms.max(0.0) / 1e3),
        time_jitter: c.time_jitter.clamp(0.0, 1.0),
        busy: c.busy,
        seed: c.seed,
        slow_rank: c.slow_rank,
        slow_factor: c.slow_factor,
        die_rank: c.die_rank,
        die_after: c.die_after,
    };
    let cfg = c.farm.config(spec.max_task_len(), spec.max_result_len());
    synthetic::run_program(spec, &cfg, "farm-synthetic")
}
