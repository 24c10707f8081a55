//! Running a whole grid: one emulation per network (latency, loss), every
//! remaining cell on it, each row appended to the CSV as soon as it ends.

use crate::cell::{kill_leftovers, run_cell, Context, Programs};
use crate::error::BenchError;
use crate::grid::{fmt_num, Grid};
use crate::netns_files::ForeignSetup;
use crate::record::{self, Row, Status};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wanmpi_emulator::{Emulation, LinkProfile, Topology, UpOptions};

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub grid: Grid,
    pub programs: Programs,
    /// Time limit of one run (launch included).
    pub limit: Duration,
    /// TCP congestion control in the hosts; `None`: the kernel's.
    pub cc: Option<String>,
    /// MTU of the emulated hosts' devices (default: the emulator's).
    pub mtu: Option<u32>,
    /// The CSV; the table and plots go beside it.
    pub csv: PathBuf,
    /// Keep the rows already in `csv` and run only the cells it lacks.
    pub resume: bool,
    /// Ranks (= emulated hosts) per run.
    pub np: usize,
    /// Emulated sites (sites, hosts per site): the grid's networks are then
    /// the links between sites, `lan` the links inside one.
    pub sites: Option<(usize, usize)>,
    pub lan: String,
    /// Seed of the emulator's loss draws.
    pub seed: u64,
    /// Rate of every link of the grid's networks (`rate=` of a profile).
    pub rate: Option<String>,
    /// Links cut in every run (`--outage`).
    pub outage: Option<crate::outage::Outage>,
    /// Where compiled programs and the agent script live during the run.
    pub work_dir: PathBuf,
    /// Set (to a signal number) to stop after the current run.
    pub cancel: Option<Arc<AtomicUsize>>,
    /// Draw a progress bar (on a terminal).
    pub progress: bool,
}

fn cancelled(c: &Option<Arc<AtomicUsize>>) -> bool {
    c.as_ref().is_some_and(|c| c.load(Ordering::SeqCst) != 0)
}

/// Runs every cell of the grid not yet in the CSV; returns all rows of the
/// CSV afterwards (earlier ones included).
pub fn run_grid(opts: &RunOptions) -> Result<Vec<Row>, BenchError> {
    let mut done: HashSet<String> = HashSet::new();
    if opts.resume && opts.csv.exists() {
        done.extend(record::read(&opts.csv)?.iter().map(|r| r.cell.key()));
    }
    let mut writer = record::Writer::open(&opts.csv, opts.resume)?;
    let todo = opts.grid.networks().iter().flat_map(|n| opts.grid.cells_on(*n)).filter(|c| !done.contains(&c.key())).count();
    let bar = if opts.progress { ProgressBar::new(todo as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    if !done.is_empty() {
        bar.println(format!("resuming: {} cells already in {}", done.len(), opts.csv.display()));
    }
    let needs_foreign = opts.grid.implementations.iter().any(|i| i.is_c());
    for net in opts.grid.networks() {
        let cells: Vec<_> = opts.grid.cells_on(net).into_iter().filter(|c| !done.contains(&c.key())).collect();
        if cells.is_empty() {
            continue;
        }
        if cancelled(&opts.cancel) {
            break;
        }
        let profile = net.profile() + &opts.rate.as_ref().map(|r| format!(",rate={r}")).unwrap_or_default();
        bar.set_message(format!("bringing up {profile}"));
        let wan = LinkProfile::parse(&profile)?;
        let mut topo = match opts.sites {
            Some((s, h)) => Topology::sites(s, h, LinkProfile::parse(&opts.lan)?, wan),
            None => Topology::uniform(opts.np, wan),
        };
        topo.seed = opts.seed;
        let emu = Emulation::up(&topo, &UpOptions { congestion_control: opts.cc.clone(), mtu: opts.mtu, ..UpOptions::default() })?;
        let cc = wanmpi_launcher::emulate::congestion_control(&emu, 0).unwrap_or_else(|e| format!("unknown: {e}"));
        let hosts = emu.hosts();
        let setup = if needs_foreign { Some(ForeignSetup::create(&hosts, &opts.work_dir)?) } else { None };
        let agent = setup.as_ref().map(|s| s.agent.clone()).unwrap_or_default();
        let ctx = Context {
            hosts: &hosts,
            sites: &topo.sites,
            agent: &agent,
            programs: &opts.programs,
            limit: opts.limit,
            cc: &cc,
            cancel: opts.cancel.clone(),
        };
        for cell in &cells {
            if cancelled(&opts.cancel) {
                break;
            }
            bar.set_message(format!(
                "{} {} ms {}% {} B rep {}",
                cell.implementation,
                fmt_num(net.delay_ms),
                fmt_num(net.loss_pct),
                cell.size,
                cell.rep
            ));
            let row = crate::outage::around(&emu, hosts.len(), opts.outage, || run_cell(&ctx, cell));
            if row.status != Status::Ok {
                bar.println(format!("{}: {} ({})", cell.key(), row.status, row.note));
            }
            writer.write(&row)?;
            bar.inc(1);
        }
        kill_leftovers(&hosts);
        drop(setup);
        emu.down()?;
    }
    bar.finish_and_clear();
    record::read(&opts.csv)
}

/// The Markdown table and the plots beside the CSV: `X.csv` gives `X.md`
/// and `X-<size>.png` (captioned with `title`). Returns the files written.
pub fn write_reports(rows: &[Row], csv: &Path, title: &str) -> Result<Vec<PathBuf>, BenchError> {
    let stem = csv.with_extension("");
    let md = csv.with_extension("md");
    std::fs::write(&md, crate::table::markdown(rows)).map_err(|e| BenchError::io(format!("writing {}", md.display()), e))?;
    let mut files = vec![md];
    files.extend(crate::plot::plot_all(rows, &stem, title)?);
    Ok(files)
}
