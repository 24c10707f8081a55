//! The farm's binaries under the real `mpirun`, tcp transport. Build first:
//! `cargo build --release -p wanmpi-farm -p wanmpi-launcher`, then
//! `cargo test --release -p wanmpi-farm --test farm_runs`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// One job at a time: the machine has 2 cores and the runs are timed loosely.
static JOBS: Mutex<()> = Mutex::new(());

fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let target = exe.ancestors().find(|p| p.file_name().is_some_and(|n| n == "target")).expect("test runs from a target dir").to_path_buf();
    target.join("release")
}

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

fn mpirun(n: usize, mpirun_flags: &[&str], prog: &str, args: &[&str]) -> Run {
    let dir = release_dir();
    let mpirun = dir.join("mpirun");
    let prog = dir.join(prog);
    assert!(mpirun.exists() && prog.exists(), "build first: cargo build --release -p wanmpi-farm -p wanmpi-launcher (looked in {})", dir.display());
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let o = Command::new(&mpirun)
        .args(["-n", &n.to_string(), "--timeout", "60", "--transport", "tcp"])
        .args(mpirun_flags)
        .arg(&prog)
        .args(args)
        .output()
        .expect("run mpirun");
    let r = Run { code: o.status.code(), out: String::from_utf8_lossy(&o.stdout).into(), err: String::from_utf8_lossy(&o.stderr).into() };
    eprintln!("--- stdout\n{}--- stderr\n{}", r.out, r.err);
    r
}

/// The number in a summary line just before `what`, e.g. "3 re-issued".
fn count_before(out: &str, what: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with("farm: ") && l.contains(what)).unwrap_or_else(|| panic!("no summary line with {what:?}"));
    let head = &line[..line.find(what).unwrap_or(0)];
    head.split([' ', ',']).rfind(|s| !s.is_empty()).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no count before {what:?} in {line:?}"))
}

/// The fields of the per-worker table's rows. Other ranks' lines (the
/// writer's "results:") may be interleaved with rank 0's table, so rows are
/// picked by their shape between "farm workers:" and the next "farm: " line.
fn table(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .skip_while(|l| !l.starts_with("farm workers:"))
        .skip(1)
        .take_while(|l| !l.starts_with("farm: "))
        .filter(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 10 && f[0].parse::<i32>().is_ok())
        .collect()
}

/// Per-worker rows: (rank, max depth, state).
fn worker_rows(out: &str) -> Vec<(i32, Option<u64>, String)> {
    worker_depths(out).into_iter().map(|(rank, _, max, state)| (rank, max, state)).collect()
}

/// Per-worker rows: (rank, mean depth, max depth, state).
fn worker_depths(out: &str) -> Vec<(i32, Option<f64>, Option<u64>, String)> {
    table(out)
        .into_iter()
        .map(|f| {
            let mean = f[8].split('/').next().and_then(|d| d.parse().ok());
            let max = f[8].split('/').next_back().and_then(|d| d.parse().ok());
            (f[0].parse().unwrap_or(-1), mean, max, f[9].to_string())
        })
        .collect()
}

fn all_ok(r: &Run, tasks: u64) {
    assert_eq!(r.code, Some(0), "job failed");
    let want = format!("results: {tasks}/{tasks} ok, 0 missing, 0 duplicate, 0 mismatched");
    assert!(r.out.contains(&want), "expected {want:?}");
    assert!(r.out.contains("farm time: measured"), "no predicted-vs-measured line");
    assert!(r.out.contains("farm: results processed on rank "), "no line saying where results were processed");
}

const UNEVEN: &[&str] =
    &["--task-ms", "2", "--time-jitter", "0.9", "--task-bytes", "20000", "--result-bytes", "80000", "--size-jitter", "0.8", "--progress", "lines"];

#[test]
fn every_result_once_k1_uneven_sizes_and_times() {
    let r = mpirun(4, &[], "farm-synthetic", &[&["--tasks", "150", "-k", "1"], UNEVEN].concat());
    all_ok(&r, 150);
}

#[test]
fn every_result_once_k10_uneven_sizes_and_times() {
    let r = mpirun(4, &[], "farm-synthetic", &[&["--tasks", "150", "-k", "10", "--max-requests", "2", "--max-tags", "16"], UNEVEN].concat());
    all_ok(&r, 150);
}

#[test]
fn bulk_farm_fanout_10_runs() {
    let r = mpirun(
        4,
        &[],
        "farm-bulk",
        &["--tasks", "120", "--fanout", "10", "--task-ms", "1", "--task-bytes", "30720", "--max-work-tags", "40", "--progress", "off"],
    );
    all_ok(&r, 120);
}

#[test]
fn adaptive_depth_stays_small_on_loopback() {
    let r = mpirun(
        4,
        &[],
        "farm-synthetic",
        &["--tasks", "120", "--task-ms", "5", "--task-bytes", "4096", "--adaptive", "--max-requests", "20", "--progress", "off"],
    );
    all_ok(&r, 120);
    for (rank, depth, _) in worker_rows(&r.out) {
        let d = depth.expect("depth");
        assert!(d <= 4, "rank {rank}: depth {d} on loopback (RTT << 5 ms task) should stay small, not MAXREQS=20");
    }
}

#[test]
fn adaptive_depth_grows_with_emulated_rtt() {
    let r = mpirun(
        4,
        &["--emulate", "delay=10ms"],
        "farm-synthetic",
        &["--tasks", "150", "--task-ms", "5", "--task-bytes", "4096", "--adaptive", "--max-requests", "20", "--progress", "off"],
    );
    if r.code != Some(0) && !r.out.contains("farm-synthetic:") {
        eprintln!("SKIP: the WAN emulator is not available here");
        return;
    }
    all_ok(&r, 150);
    for (rank, depth, _) in worker_rows(&r.out) {
        let d = depth.expect("depth");
        // RTT 20 ms over 5 ms tasks: at least 4 ahead plus the one running.
        assert!((5..=20).contains(&d), "rank {rank}: depth {d} with a 20 ms RTT");
    }
}

#[test]
fn adaptive_depth_covers_loss_stalls() {
    // 40 ms RTT over 5 ms tasks: the RTT rule alone holds about 10 ahead;
    // a retransmission timeout (>= 200 ms) wants 40 or more, so the cap.
    // The maximum does not tell the rules apart (the RTT rule too jumps at
    // a stall it sees); the mean does: measured 19-21 (the end game's
    // small shares included) against the cap's 40.
    let r = mpirun(
        4,
        &["--emulate", "delay=20ms,loss=3%"],
        "farm-synthetic",
        &["--tasks", "600", "--task-ms", "5", "--task-bytes", "4096", "--adaptive", "--progress", "off"],
    );
    if r.code != Some(0) && !r.out.contains("farm-synthetic:") {
        eprintln!("SKIP: the WAN emulator is not available here");
        return;
    }
    all_ok(&r, 600);
    assert!(r.out.contains("MAXREQS=40"), "--adaptive should default the cap to 40");
    let rows = worker_depths(&r.out);
    let means: Vec<f64> = rows.iter().filter_map(|(_, m, _, _)| *m).collect();
    let mean = means.iter().sum::<f64>() / means.len().max(1) as f64;
    assert!(mean >= 15.0, "mean depth {mean:.1}: stalls at 3 % loss should hold the depth above the RTT rule's ~10");
    for (rank, _, max, _) in rows {
        let d = max.expect("depth");
        assert!(d <= 40, "rank {rank}: depth {d} above the cap of 40");
    }
}

#[test]
fn end_game_reissues_a_stragglers_tasks_and_discards_duplicates() {
    let r = mpirun(
        4,
        &[],
        "farm-synthetic",
        &["--tasks", "90", "--task-ms", "5", "--task-bytes", "4096", "--slow-rank", "2", "--slow-factor", "30", "--progress", "off"],
    );
    all_ok(&r, 90);
    assert!(count_before(&r.out, "re-issued") >= 1, "no task was re-issued");
    // The straggler's copies were either dropped unstarted (cancelled) or
    // computed and discarded; process_result saw each task once (checked above).
    let dup = count_before(&r.out, "duplicate results discarded");
    let rows = worker_rows(&r.out);
    assert!(rows.iter().any(|(rank, _, _)| *rank == 2));
    let dropped: u64 = table(&r.out).iter().filter_map(|f| f[3].parse::<u64>().ok()).sum();
    assert!(dup + dropped >= 1, "straggler's copies neither dropped nor discarded");
}

#[test]
fn end_game_off_reissues_nothing() {
    let r = mpirun(
        4,
        &[],
        "farm-synthetic",
        &["--tasks", "40", "--task-ms", "5", "--task-bytes", "4096", "--slow-rank", "2", "--slow-factor", "4", "--no-end-game", "--progress", "off"],
    );
    all_ok(&r, 40);
    assert_eq!(count_before(&r.out, "re-issued"), 0);
}

#[test]
fn killed_worker_is_survived_with_tolerate_rank_failure() {
    let r = mpirun(
        4,
        &["--tolerate-rank-failure"],
        "farm-synthetic",
        &["--tasks", "100", "--task-ms", "5", "--task-bytes", "4096", "--die-rank", "2", "--die-after", "5", "--progress", "off"],
    );
    all_ok(&r, 100);
    assert!(r.err.contains("kills itself"), "the test hook did not fire");
    assert!(count_before(&r.out, "re-queued from lost workers") >= 1, "the dead worker's tasks were not handed out again");
    let rows = worker_rows(&r.out);
    assert!(rows.iter().any(|(rank, _, state)| *rank == 2 && state == "LOST"));
    assert!(rows.iter().filter(|(rank, _, _)| *rank != 2).all(|(_, _, s)| s == "ok"));
}

#[test]
fn killed_worker_ends_the_job_without_the_flag() {
    let r = mpirun(
        4,
        &[],
        "farm-synthetic",
        &["--tasks", "100", "--task-ms", "5", "--task-bytes", "4096", "--die-rank", "2", "--die-after", "5", "--progress", "off"],
    );
    assert_ne!(r.code, Some(0));
    assert!(!r.out.contains("results:"), "the farm should not have finished");
    assert!(r.err.contains("MPIX_ERR_PROC_FAILED") || r.err.contains("killed by signal 9"), "no clear message");
}

#[test]
fn correlation_equals_serial() {
    let r = mpirun(4, &[], "farm-correlation", &["--samples", "40", "--genes", "80", "--tasks", "60", "-k", "2", "--progress", "off"]);
    assert_eq!(r.code, Some(0));
    assert!(r.out.contains("0 of 6400 entries differ"));
    assert!(r.out.contains("matches the serial computation"));
}

#[test]
fn correlation_from_csv() {
    let dir = std::env::temp_dir().join(format!("wanmpi-farm-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("data.csv");
    let mut text = String::from("g0,g1,g2,g3\n");
    for i in 0..25 {
        let x = i as f64;
        text += &format!("{},{},{},{}\n", x, 2.0 * x + (i % 3) as f64, if i == 7 { 500.0 } else { -x }, (x * 0.7).sin());
    }
    std::fs::write(&path, text).expect("write csv");
    let out = dir.join("matrix.csv");
    let r = mpirun(
        3,
        &[],
        "farm-correlation",
        &["--csv", path.to_str().unwrap_or_default(), "--tasks", "3", "--output", out.to_str().unwrap_or_default(), "--progress", "off"],
    );
    assert_eq!(r.code, Some(0));
    assert!(r.out.contains("25 samples x 4 variables"));
    assert!(r.out.contains("matches the serial computation"));
    let m = std::fs::read_to_string(&out).expect("matrix written");
    let row0: Vec<f64> = m.lines().next().unwrap_or_default().split(',').filter_map(|v| v.parse().ok()).collect();
    assert_eq!(row0.len(), 4);
    assert!(row0[1] > 0.9, "g0 and g1 are strongly correlated: {}", row0[1]);
    assert!(row0[2] < -0.9, "g2 is -g0 but for one gross outlier: {}", row0[2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn model_cli_prints_the_papers_formula() {
    let o = Command::new(release_dir().join("wanmpi-model"))
        .args(["worker", "--rtt-ms", "80", "--task-ms", "24", "--tasks", "10"])
        .output()
        .expect("run wanmpi-model");
    let out = String::from_utf8_lossy(&o.stdout);
    // 0.08 + 0.24 + 9 * 0.056 = 0.824 s.
    assert!(out.contains("paper form (1 request):   0.824 s"), "{out}");
    assert!(out.contains("tasks ahead to cover RTT: 4"), "{out}");
}

// The manager split into scheduler (rank 0) and writer (`--writer [RANK]`).

/// The writer's summary line: (rank, processed, duplicates, dropped).
fn writer_line(out: &str) -> (i32, u64, u64, u64) {
    let line = out.lines().find(|l| l.starts_with("farm: results processed on rank ")).expect("no writer line");
    let nums: Vec<u64> = line.split([' ', ':', ',']).filter_map(|s| s.parse().ok()).collect();
    assert!(line.contains("(writer)"), "results not on a writer: {line:?}");
    (nums[0] as i32, nums[1], nums[2], nums[3])
}

/// Every result once, checked on the writer rank, and rank 0's statistics
/// (from the writer's verdicts) agree with the writer's own counts.
fn split_ok(r: &Run, tasks: u64, writer: i32) {
    all_ok(r, tasks);
    assert!(r.out.contains(&format!("mismatched (checked on the writer, rank {writer})")), "the check did not run on the writer");
    let (rank, processed, dups, _) = writer_line(&r.out);
    assert_eq!((rank, processed), (writer, tasks));
    assert_eq!(dups, count_before(&r.out, "duplicate results discarded"), "scheduler and writer disagree on duplicates");
    let accepted: u64 = table(&r.out).iter().filter_map(|f| f[1].parse::<u64>().ok()).sum();
    assert_eq!(accepted, tasks, "per-worker accepted results do not add up");
    assert!(worker_rows(&r.out).iter().all(|(rank, _, _)| *rank != 0 && *rank != writer), "the writer is listed as a worker");
}

#[test]
fn split_writer_every_result_once_k1_uneven_sizes_and_times() {
    let r = mpirun(4, &[], "farm-synthetic", &[&["--tasks", "150", "-k", "1", "--writer"], UNEVEN].concat());
    split_ok(&r, 150, 1);
}

#[test]
fn split_writer_every_result_once_k10_uneven_sizes_and_times() {
    let r = mpirun(
        5,
        &[],
        "farm-synthetic",
        &[&["--tasks", "150", "-k", "10", "--max-requests", "2", "--max-tags", "16", "--writer", "3"], UNEVEN].concat(),
    );
    split_ok(&r, 150, 3);
    assert_eq!(worker_rows(&r.out).iter().map(|(rank, _, _)| *rank).collect::<Vec<_>>(), vec![1, 2, 4]);
}

#[test]
fn split_writer_bulk_farm_fanout_10() {
    let r = mpirun(
        4,
        &[],
        "farm-bulk",
        &["--tasks", "120", "--fanout", "10", "--task-ms", "1", "--task-bytes", "30720", "--max-work-tags", "40", "--progress", "off", "--writer"],
    );
    split_ok(&r, 120, 1);
}

#[test]
fn split_writer_end_game_discards_duplicates_on_the_writer() {
    let r = mpirun(
        5,
        &[],
        "farm-synthetic",
        &["--tasks", "90", "--task-ms", "5", "--task-bytes", "4096", "--slow-rank", "2", "--slow-factor", "30", "--progress", "off", "--writer"],
    );
    split_ok(&r, 90, 1);
    assert!(count_before(&r.out, "re-issued") >= 1, "no task was re-issued");
    // Each copy of the straggler's was dropped unstarted or, computed
    // anyway, discarded by the writer; process_result saw each task once.
    let (_, _, dups, dropped) = writer_line(&r.out);
    assert!(dups + dropped >= 1, "the straggler's copies were neither dropped nor discarded");
}

#[test]
fn split_writer_survives_a_killed_worker() {
    let r = mpirun(
        5,
        &["--tolerate-rank-failure"],
        "farm-synthetic",
        &["--tasks", "100", "--task-ms", "5", "--task-bytes", "4096", "--die-rank", "2", "--die-after", "5", "--progress", "off", "--writer"],
    );
    split_ok(&r, 100, 1);
    assert!(r.err.contains("kills itself"), "the test hook did not fire");
    assert!(count_before(&r.out, "re-queued from lost workers") >= 1, "the dead worker's tasks were not handed out again");
    let rows = worker_rows(&r.out);
    assert!(rows.iter().any(|(rank, _, state)| *rank == 2 && state == "LOST"));
    assert!(rows.iter().filter(|(rank, _, _)| *rank != 2).all(|(_, _, s)| s == "ok"));
}

#[test]
fn split_writer_lost_ends_the_job_naming_it() {
    let r = mpirun(
        5,
        &["--tolerate-rank-failure"],
        "farm-synthetic",
        &["--tasks", "200", "--task-ms", "5", "--task-bytes", "4096", "--die-rank", "1", "--die-after", "20", "--progress", "off", "--writer"],
    );
    assert_ne!(r.code, Some(0));
    assert!(r.err.contains("kills itself after 20 tasks processed"), "the test hook did not fire");
    assert!(!r.out.contains("results:"), "the farm should not have finished");
    assert!(r.err.contains("writer (rank 1) was lost"), "no clear message naming the writer");
}

#[test]
fn split_writer_correlation_equals_serial() {
    let r =
        mpirun(4, &[], "farm-correlation", &["--samples", "40", "--genes", "80", "--tasks", "60", "-k", "2", "--progress", "off", "--writer", "2"]);
    assert_eq!(r.code, Some(0));
    assert!(r.out.contains("correlation (on rank 2):"), "the matrix was not assembled on the writer");
    assert!(r.out.contains("0 of 6400 entries differ"));
    assert!(r.out.contains("matches the serial computation"));
    assert_eq!(writer_line(&r.out).0, 2);
}

#[test]
fn split_writer_needs_three_processes() {
    let r = mpirun(2, &[], "farm-synthetic", &["--tasks", "10", "--writer", "--progress", "off"]);
    assert_ne!(r.code, Some(0));
    assert!(r.err.contains("a writer rank needs at least 3 processes"), "no clear message");
}
