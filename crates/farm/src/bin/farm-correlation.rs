//! The robust correlation matrix of paper 000 §4.1 as a farm: the manager
//! standardizes each column by median and MAD and broadcasts the result;
//! tasks are ranges of column pairs; workers compute each pair's Maronna
//! correlation; the manager assembles the matrix and checks it against a
//! serial computation of the same method. With `--writer` the writer rank
//! takes the results, assembles, writes and checks the matrix (rank 0 also
//! sends it the raw data for the serial check).

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use wanmpi::Communicator;
use wanmpi_farm::workload::{cli::FarmArgs, data, maronna};
use wanmpi_farm::{Farm, Outcome};

#[derive(Parser, Debug)]
#[command(name = "farm-correlation", about = "Robust (Maronna) correlation matrix as a task farm (run under mpirun)")]
struct Cli {
    /// Samples (rows) of the synthetic data set.
    #[arg(long, default_value_t = 60)]
    samples: usize,
    /// Genes (variables, columns) of the synthetic data set.
    #[arg(long, default_value_t = 200)]
    genes: usize,
    /// Fraction of entries replaced by gross outliers.
    #[arg(long, default_value_t = 0.02)]
    outliers: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Read the data from this CSV file instead (rows samples, columns variables).
    #[arg(long)]
    csv: Option<String>,
    /// Number of tasks (ranges of pairs).
    #[arg(long, default_value_t = 200)]
    tasks: u64,
    /// Skip the serial check.
    #[arg(long)]
    no_check: bool,
    /// Write the matrix here as CSV.
    #[arg(long)]
    output: Option<String>,
    #[command(flatten)]
    farm: FarmArgs,
}

struct CorrFarm {
    z: Vec<f64>,
    samples: usize,
    vars: usize,
    tasks: u64,
    flat: Vec<f64>,
}

impl CorrFarm {
    fn range(&self, id: u64) -> (u64, u64) {
        let p = maronna::pairs(self.vars);
        (id * p / self.tasks, (id + 1) * p / self.tasks)
    }
}

impl Farm for CorrFarm {
    fn total_tasks(&self) -> u64 {
        self.tasks
    }
    fn create_task(&mut self, id: u64) -> Vec<u8> {
        let (a, b) = self.range(id);
        [a.to_le_bytes(), b.to_le_bytes()].concat()
    }
    fn do_task(&mut self, _id: u64, task: &[u8]) -> Vec<u8> {
        let get = |i: usize| task.get(i..i + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
        let (Some(a), Some(b)) = (get(0), get(8)) else { return vec![] };
        let p = maronna::pairs(self.vars);
        maronna::pair_range(&self.z, self.samples, self.vars, a.min(p), b.min(p)).iter().flat_map(|v| v.to_le_bytes()).collect()
    }
    fn process_result(&mut self, id: u64, result: &[u8]) {
        let (a, _) = self.range(id);
        for (k, c) in result.chunks_exact(8).enumerate() {
            if let (Some(slot), Ok(b)) = (self.flat.get_mut(a as usize + k), c.try_into()) {
                *slot = f64::from_le_bytes(b);
            }
        }
    }
}

fn load(c: &Cli) -> Result<data::Matrix, String> {
    match &c.csv {
        Some(p) => data::read_csv(p).map_err(|e| e.to_string()),
        None => Ok(data::synthetic(c.samples, c.genes, c.outliers, c.seed)),
    }
}

/// Rank 0 loads and standardizes; everyone gets the standardized data, and
/// the writer (if any) the raw data too, for its serial check.
fn share(world: &Communicator, c: &Cli) -> Result<(Option<data::Matrix>, Vec<f64>, usize, usize), String> {
    let mut dims = [0u64; 2];
    let mut m = None;
    let mut z = vec![];
    if world.rank() == 0 {
        match load(c) {
            Ok(mat) => {
                dims = [mat.samples as u64, mat.vars as u64];
                z = maronna::standardize(&mat);
                m = Some(mat);
            }
            Err(e) => eprintln!("farm-correlation: {e}"),
        }
    }
    world.broadcast_into(&mut dims, 0).map_err(|e| e.to_string())?;
    let (samples, vars) = (dims[0] as usize, dims[1] as usize);
    if samples == 0 || vars < 2 {
        return Err("no usable data (need at least 1 sample and 2 variables)".into());
    }
    z.resize(samples * vars, 0.0);
    world.broadcast_into(&mut z, 0).map_err(|e| e.to_string())?;
    if let Some(w) = c.farm.writer.filter(|w| *w > 0 && *w < world.size()) {
        if world.rank() == 0 {
            let values = m.as_ref().map(|m: &data::Matrix| m.values.clone()).unwrap_or_default();
            world.send(&values[..], w, 0).map_err(|e| e.to_string())?;
        } else if world.rank() == w {
            let mut values = vec![0.0f64; samples * vars];
            world.receive_into(&mut values[..], 0, 0).map_err(|e| e.to_string())?;
            m = Some(data::Matrix { samples, vars, values });
        }
    }
    Ok((m, z, samples, vars))
}

fn main() -> ExitCode {
    let c = Cli::parse();
    let universe = match wanmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("farm-correlation: MPI_Init failed: {e}");
            return ExitCode::from(2);
        }
    };
    let world = universe.world();
    let (m, z, samples, vars) = match share(&world, &c) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("farm-correlation: {e}");
            return ExitCode::from(2);
        }
    };
    let pairs = maronna::pairs(vars);
    let tasks = c.tasks.clamp(1, pairs.max(1));
    let per_task = pairs.div_ceil(tasks) as usize;
    let cfg = c.farm.config(16, per_task * 8 + 8);
    if world.rank() == 0 {
        println!("farm-correlation: {samples} samples x {vars} variables, {pairs} pairs in {tasks} tasks, {} workers", world.size() - 1);
    }
    let here = world.rank() == cfg.results_rank();
    let mut farm = CorrFarm { z, samples, vars, tasks, flat: if here { vec![f64::NAN; pairs as usize] } else { vec![] } };
    let elapsed_s = match wanmpi_farm::run(&world, &cfg, &mut farm) {
        Ok(Outcome::Manager(r)) if here => r.elapsed_s,
        Ok(Outcome::Writer(r)) => r.elapsed_s,
        Ok(_) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("farm-correlation: rank {}: farm failed: {e}", world.rank());
            world.abort(2)
        }
    };
    let matrix = maronna::assemble(vars, &farm.flat);
    if let Some(path) = &c.output {
        let text: String = matrix.chunks(vars).map(|r| r.iter().map(|v| format!("{v:.17e}")).collect::<Vec<_>>().join(",") + "\n").collect();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("farm-correlation: writing {path}: {e}");
            return ExitCode::from(2);
        }
    }
    if c.no_check {
        return ExitCode::SUCCESS;
    }
    let Some(m) = m else { return ExitCode::from(2) };
    let t = Instant::now();
    let serial = maronna::serial(&m);
    let serial_s = t.elapsed().as_secs_f64();
    let diff = matrix.iter().zip(&serial).map(|(a, b)| if a == b { 0.0 } else { (a - b).abs() }).fold(0.0f64, |x, y| {
        if y.is_nan() {
            f64::INFINITY
        } else {
            x.max(y)
        }
    });
    let bad = matrix.iter().zip(&serial).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    println!(
        "correlation (on rank {}): farmed {:.3} s, serial {:.3} s; {} of {} entries differ from the serial computation (max |diff| {:e})",
        world.rank(),
        elapsed_s,
        serial_s,
        bad,
        matrix.len(),
        diff
    );
    if bad == 0 {
        println!("correlation: matches the serial computation");
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
