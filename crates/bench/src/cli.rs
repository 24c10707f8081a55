//! The `wanmpi bench` / `wanmpi-bench` command line.

use crate::cell::Programs;
use crate::compile::compile;
use crate::error::BenchError;
use crate::grid::{parse_list, parse_ms, parse_pct, parse_size, Grid, Implementation};
use crate::runner::{run_grid, write_reports, RunOptions};
use clap::Parser;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// The C ping-pong, built into this binary so it needs no source tree.
pub const PINGPONG_C: &str = include_str!("../c/pingpong.c");

/// Runs a grid of MPI implementations x latencies x loss rates x message
/// sizes x repetitions across the WAN emulator and writes a CSV, a Markdown
/// table and PNG plots. Needs root (network namespaces).
#[derive(Debug, Parser)]
#[command(
    name = "wanmpi bench",
    version,
    after_help = "ARGS after -- are the program's; {size} and {iters} are replaced per run.\nDefault ARGS: --sizes {size} --iters {iters} --csv (the ping-pong).\nDocumentation: docs/benchmarks.md, docs/emulated-runs.md"
)]
pub struct Args {
    /// Implementations: wanmpi:TRANSPORT (tcp, sctp, ...), openmpi, mpich.
    #[arg(long = "impl", value_name = "LIST", default_value = "wanmpi:tcp")]
    pub implementations: String,
    /// One-way latencies of every link (ms unless a unit is given).
    #[arg(long, value_name = "LIST", default_value = "0")]
    pub latency: String,
    /// Loss rates in percent.
    #[arg(long, value_name = "LIST", default_value = "0")]
    pub loss: String,
    /// Message sizes in bytes (30KiB, 300k allowed).
    #[arg(long, value_name = "LIST", default_value = "30720,307200")]
    pub sizes: String,
    /// Repetitions of every cell.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Round trips per run ({iters} in the program's arguments).
    #[arg(long, default_value_t = 20)]
    pub iters: u32,
    /// wanmpi program. Default: `pingpong` beside this executable.
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// C source compiled with mpicc.openmpi / mpicc.mpich. Default: the
    /// built-in ping-pong (crates/bench/c/pingpong.c).
    #[arg(long, value_name = "FILE.c")]
    pub c_source: Option<PathBuf>,
    /// Time limit of one run, seconds.
    #[arg(long, default_value_t = 60.0)]
    pub time_limit: f64,
    /// TCP congestion control in the emulated hosts: reno, cubic, bbr.
    /// Default: the kernel's (recorded in every row either way).
    #[arg(long, value_name = "CC")]
    pub cc: Option<String>,
    /// MTU of the emulated hosts' devices (576..65000). Default: the
    /// emulator's 1500, a real WAN's (loss is drawn per packet); 65000 for
    /// the figures measured before issue 13.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u32>,
    /// Ranks per run, one per emulated host.
    #[arg(long, default_value_t = 2)]
    pub np: usize,
    /// Emulated sites: S sites of H hosts (`SxH`, one rank per host; sets
    /// --np to S*H). --latency and --loss are then the links between
    /// sites; --lan the links inside a site.
    #[arg(long, value_name = "SxH")]
    pub sites: Option<String>,
    /// Profile of the links inside a site (with --sites).
    #[arg(long, value_name = "PROFILE", default_value = "delay=100us", requires = "sites")]
    pub lan: String,
    /// Seed of the emulator's loss draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rate of every link (e.g. 200mbit), behind a drop-tail queue (the
    /// emulator's default: 100 ms of bytes). Default: unlimited.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Cut every link AT seconds into each run, for SECS seconds (AT:SECS,
    /// e.g. 5:60): how each implementation rides through a WAN outage.
    #[arg(long, value_name = "AT:SECS")]
    pub outage: Option<String>,
    /// Results CSV; the table (.md) and plots (-SIZE.png) go beside it.
    #[arg(long, short, value_name = "FILE", default_value = "bench-results/pingpong.csv")]
    pub out: PathBuf,
    /// Keep the rows already in the CSV and run only the missing cells.
    #[arg(long)]
    pub resume: bool,
    /// Only rebuild the table and plots from the CSV.
    #[arg(long)]
    pub report_only: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// What the plots' captions call the program.
    #[arg(long, default_value = "Ping-pong")]
    pub title: String,
    /// The program's arguments.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

impl Args {
    pub fn grid(&self) -> Result<Grid, BenchError> {
        let grid = Grid {
            implementations: parse_list("--impl", &self.implementations, |s| Implementation::parse(s).ok())?,
            delays_ms: parse_list("--latency", &self.latency, parse_ms)?,
            losses_pct: parse_list("--loss", &self.loss, parse_pct)?,
            sizes: parse_list("--sizes", &self.sizes, parse_size)?,
            reps: self.reps,
        };
        if grid.reps == 0 {
            return Err(BenchError::Usage("--reps must be at least 1".into()));
        }
        Ok(grid)
    }
}

fn beside_me(name: &str) -> PathBuf {
    let found = std::env::current_exe().ok().and_then(|me| me.parent().map(|d| d.join(name))).filter(|p| p.is_file());
    found.unwrap_or_else(|| PathBuf::from(name))
}

/// Ranks start in other directories' namespaces: give them whole paths.
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() || p.components().count() == 1 {
        return p.to_path_buf(); // a bare name is looked up on PATH
    }
    std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf())
}

/// Everything `main` does, with the arguments (without the program name).
pub fn run(args: &Args, cancel: Option<Arc<AtomicUsize>>) -> Result<Vec<PathBuf>, BenchError> {
    if args.report_only {
        let rows = crate::record::read(&args.out)?;
        return write_reports(&rows, &args.out, &args.title);
    }
    let grid = args.grid()?;
    let limit = Duration::try_from_secs_f64(args.time_limit).map_err(|_| BenchError::Usage("--time-limit: not a number of seconds".into()))?;
    wanmpi_emulator::preflight()?;
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
    }
    let work_dir = std::env::temp_dir().join(format!("wanmpi-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work_dir).map_err(|e| BenchError::io(format!("creating {}", work_dir.display()), e))?;
    let result = run_in(args, grid, limit, &work_dir, cancel);
    let _ = std::fs::remove_dir_all(&work_dir);
    result
}

fn run_in(args: &Args, grid: Grid, limit: Duration, work_dir: &Path, cancel: Option<Arc<AtomicUsize>>) -> Result<Vec<PathBuf>, BenchError> {
    let source = match &args.c_source {
        Some(s) => absolute(s),
        None => {
            let s = work_dir.join("pingpong.c");
            std::fs::write(&s, PINGPONG_C).map_err(|e| BenchError::io(format!("writing {}", s.display()), e))?;
            s
        }
    };
    let mut programs = Programs {
        wanmpi: absolute(&args.program.clone().unwrap_or_else(|| beside_me("pingpong"))),
        openmpi: None,
        mpich: None,
        args: if args.args.is_empty() { ["--sizes", "{size}", "--iters", "{iters}", "--csv"].map(String::from).to_vec() } else { args.args.clone() },
        iters: args.iters,
    };
    for imp in grid.implementations.iter().filter(|i| i.is_c()) {
        let bin = compile(imp, &source, work_dir)?;
        if bin.is_none() {
            eprintln!("wanmpi bench: {imp} is not installed here; its cells will be marked skipped");
        }
        match imp {
            Implementation::OpenMpi => programs.openmpi = bin,
            _ => programs.mpich = bin,
        }
    }
    let sites = match args.sites.as_deref().map(wanmpi_launcher::emulate::SiteLayout::parse).transpose() {
        Ok(l) => l.map(|l| (l.sites, l.hosts_per_site)),
        Err(e) => return Err(BenchError::Usage(e.to_string())),
    };
    let opts = RunOptions {
        grid,
        programs,
        limit,
        cc: args.cc.clone(),
        mtu: args.mtu,
        csv: args.out.clone(),
        resume: args.resume,
        np: sites.map_or(args.np, |(s, h)| s * h),
        sites,
        lan: args.lan.clone(),
        seed: args.seed,
        rate: args.rate.clone(),
        outage: args.outage.as_deref().map(crate::outage::Outage::parse).transpose()?,
        work_dir: work_dir.to_path_buf(),
        cancel,
        progress: !args.quiet,
    };
    let rows = run_grid(&opts)?;
    let mut files = vec![args.out.clone()];
    files.extend(write_reports(&rows, &args.out, &args.title)?);
    Ok(files)
}

/// Parses, runs, prints what was written; returns the exit code.
pub fn main_with(argv: Vec<OsString>) -> i32 {
    let args = match Args::try_parse_from(std::iter::once(OsString::from("wanmpi bench")).chain(argv)) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    // SIGINT/SIGTERM end the current run and stop the grid; the emulation
    // is torn down on the way out.
    let cancel = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        if let Err(e) = signal_hook::flag::register_usize(sig, cancel.clone(), sig as usize) {
            eprintln!("wanmpi bench: cannot handle signal {sig}: {e}");
        }
    }
    match run(&args, Some(cancel.clone())) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            let sig = cancel.load(std::sync::atomic::Ordering::SeqCst);
            if sig != 0 {
                eprintln!("wanmpi bench: stopped by signal {sig}; `--resume` continues");
                return 128 + sig as i32;
            }
            0
        }
        Err(e) => {
            eprintln!("wanmpi bench: {e}");
            match e {
                BenchError::Usage(_) => 2,
                BenchError::Emulator(wanmpi_emulator::EmuError::NotPermitted(_)) => 77,
                _ => 1,
            }
        }
    }
}
