//! The Bulk Processor Farm of paper 001 §4.2.1: 10,000 tasks of 30 KiB
//! (short) or 300 KiB (long, `--long`), results of the same size, each
//! worker keeping 10 requests outstanding, Fanout tasks per request, and at
//! most MaxWorkTags distinct task tags in flight. The paper does not give
//! its compute time; `--task-ms` sets it.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use wanmpi_farm::workload::{cli::ProgressArg, synthetic};
use wanmpi_farm::FarmConfig;

#[derive(Parser, Debug)]
#[command(name = "farm-bulk", about = "The Bulk Processor Farm of paper 001 §4.2.1 (run under mpirun)")]
struct Cli {
    #[arg(long, default_value_t = 10_000)]
    tasks: u64,
    /// 300 KiB tasks instead of 30 KiB.
    #[arg(long)]
    long: bool,
    /// Task (and result) size in bytes, overriding --long.
    #[arg(long)]
    task_bytes: Option<usize>,
    /// Tasks sent per request.
    #[arg(long, default_value_t = 1)]
    fanout: u32,
    /// Outstanding requests per worker.
    #[arg(long, default_value_t = 10)]
    outstanding: u32,
    /// Distinct work tags in flight (MaxWorkTags).
    #[arg(long, default_value_t = 1000)]
    max_work_tags: usize,
    #[arg(long, default_value_t = 5.0)]
    task_ms: f64,
    #[arg(long)]
    busy: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// Split the manager: this rank (default 1) receives and processes the
    /// results, rank 0 only schedules (mpiBLAST's writer).
    #[arg(long, value_name = "RANK", num_args = 0..=1, default_missing_value = "1")]
    writer: Option<i32>,
}

fn main() -> ExitCode {
    let c = Cli::parse();
    let bytes = c.task_bytes.unwrap_or(if c.long { 300 * 1024 } else { 30 * 1024 });
    let spec = synthetic::Spec {
        tasks: c.tasks,
        task_bytes: bytes,
        result_bytes: bytes,
        size_jitter: 0.0,
        task_time: Duration::from_secs_f64(c.task_ms.max(0.0) / 1e3),
        time_jitter: 0.0,
        busy: c.busy,
        seed: c.seed,
        slow_rank: None,
        slow_factor: 1.0,
        die_rank: None,
        die_after: 0,
    };
    // The paper's program: fixed outstanding requests, no end game.
    let args = wanmpi_farm::workload::cli::FarmArgs {
        fanout: c.fanout,
        max_requests: Some(c.outstanding),
        adaptive: false,
        no_end_game: true,
        reissue_factor: 2.0,
        max_tags: c.max_work_tags,
        progress: c.progress,
        progress_every: 5.0,
        stall_timeout: 600.0,
        writer: c.writer,
    };
    let cfg: FarmConfig = args.config(spec.max_task_len(), spec.max_result_len());
    synthetic::run_program(spec, &cfg, "farm-bulk")
}
