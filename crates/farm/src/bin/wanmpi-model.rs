//! The farm's execution-time model (paper 000, Figure 5, and its buffered
//! form) on the command line: `wanmpi model ...` runs this.

use clap::{Parser, Subcommand};
use wanmpi_farm::model::{depth_to_cover, worker_time, worker_time_buffered, FarmModel};

#[derive(Parser, Debug)]
#[command(name = "wanmpi-model", about = "Predict a task farm's run time from RTT and task time (paper 000, Figure 5)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// One worker: T = RTT + n*T + max((n-1)*(RTT-T), 0), and with b buffered.
    Worker {
        #[arg(long)]
        rtt_ms: f64,
        #[arg(long)]
        task_ms: f64,
        /// Tasks this worker does.
        #[arg(long)]
        tasks: u64,
        /// Tasks requested ahead (MAXREQS*k); 1 is the paper's form.
        #[arg(long, default_value_t = 1)]
        buffered: u32,
    },
    /// A farm: the slowest worker under an even split, bounded by the
    /// manager and its link.
    Farm {
        #[arg(long)]
        rtt_ms: f64,
        #[arg(long)]
        task_ms: f64,
        #[arg(long, default_value_t = 5000)]
        tasks: u64,
        #[arg(long, default_value_t = 7)]
        workers: u32,
        #[arg(long, default_value_t = 10)]
        buffered: u32,
        /// Task + result bytes per task on the manager's link.
        #[arg(long, default_value_t = 0.0)]
        bytes_per_task: f64,
        /// Manager link bandwidth in Mbit/s (0 = unlimited).
        #[arg(long, default_value_t = 0.0)]
        mbps: f64,
        /// Manager time per task in milliseconds.
        #[arg(long, default_value_t = 0.0)]
        manager_ms: f64,
    },
    /// A table over RTTs: predicted time with 1 buffer and with b.
    Sweep {
        #[arg(long, default_value_t = 24.0)]
        task_ms: f64,
        #[arg(long, default_value_t = 715)]
        tasks: u64,
        #[arg(long, default_value_t = 10)]
        buffered: u32,
        /// RTTs in ms, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "0,40,80,160")]
        rtts_ms: Vec<f64>,
    },
}

fn main() {
    match Cli::parse().cmd {
        Cmd::Worker { rtt_ms, task_ms, tasks, buffered } => {
            let (r, t) = (rtt_ms / 1e3, task_ms / 1e3);
            println!("paper form (1 request):   {:.3} s", worker_time(r, t, tasks));
            println!("buffered ({buffered} ahead):      {:.3} s", worker_time_buffered(r, t, tasks, buffered));
            println!("compute bound:            {:.3} s", tasks as f64 * t);
            println!("tasks ahead to cover RTT: {}", depth_to_cover(r, t));
        }
        Cmd::Farm { rtt_ms, task_ms, tasks, workers, buffered, bytes_per_task, mbps, manager_ms } => {
            let mut m = FarmModel::new(rtt_ms / 1e3, task_ms / 1e3, buffered, workers, tasks);
            m.result_tail = m.rtt / 2.0;
            m.bytes_per_task = bytes_per_task;
            m.bandwidth = mbps * 1e6 / 8.0;
            m.manager_per_task = manager_ms / 1e3;
            println!("predicted:     {:.3} s", m.predict());
            println!("compute bound: {:.3} s ({} tasks per worker)", m.compute_bound(), m.tasks_per_worker());
            println!("ratio:         {:.3}", m.predict() / m.compute_bound().max(f64::MIN_POSITIVE));
        }
        Cmd::Sweep { task_ms, tasks, buffered, rtts_ms } => {
            let t = task_ms / 1e3;
            println!("| RTT ms | 1 ahead (s) | {buffered} ahead (s) | compute bound (s) | ahead needed |");
            println!("|---|---|---|---|---|");
            for r in rtts_ms {
                let rs = r / 1e3;
                println!(
                    "| {r} | {:.3} | {:.3} | {:.3} | {} |",
                    worker_time(rs, t, tasks),
                    worker_time_buffered(rs, t, tasks, buffered),
                    tasks as f64 * t,
                    depth_to_cover(rs, t)
                );
            }
        }
    }
}
