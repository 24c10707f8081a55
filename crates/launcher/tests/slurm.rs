//! Under Slurm, on a private one-node cluster of this machine
//! (tests/slurm_site: Debian's slurm-wlm as root, no munge): mpirun inside
//! an allocation (`salloc -n 3 mpirun PROG`, no hosts given) takes the
//! allocation's node and slots and starts every rank as a job step with
//! srun.
//!
//! On a private cluster of a controller and three compute nodes in
//! namespaces of their own with munge (tests/slurm_nodes), 3 nodes x 2
//! ranks of a C program on libmpi.so.12: `srun --mpi=pmi2` and `--mpi=pmix` with no
//! environment, `salloc mpirun`, `sbatch`, a rank with only loopback, a
//! rank killed by SIGKILL, and scancel, with nothing left on any node.
//!
//! Needs root and slurm-wlm (and munge for the nodes); says why and skips
//! without them.

mod common;
mod slurm_nodes;
mod slurm_site;
use common::*;
use slurm_site::*;
use std::time::Instant;

#[test]
fn mpirun_in_an_allocation_starts_ranks_with_srun() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED mpirun_in_an_allocation_starts_ranks_with_srun: {why}");
        return;
    }
    let cluster = match Cluster::start("alloc") {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED mpirun_in_an_allocation_starts_ranks_with_srun: the Slurm daemons did not start: {why}");
            return;
        }
    };
    let mut c = cluster.command("salloc");
    c.args(["-n", "3", "--time=1", MPIRUN, PROBE, "exchange", "env:SLURM_STEP_ID", "env:SLURM_JOB_ID", "print:node {rank}", "finalize"]);
    let started = Instant::now();
    let r = finish(c.spawn().expect("salloc"), started);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}\n{}", r.stdout, r.stderr, cluster.logs());
    assert_eq!(r.stdout.matches("got v0,v1,v2").count(), 3, "{}", r.stdout);
    // Each rank is a step of its own in the allocation.
    let mut steps: Vec<&str> = r.stdout.lines().filter_map(|l| l.strip_prefix("SLURM_STEP_ID=")).collect();
    steps.sort_unstable();
    steps.dedup();
    assert_eq!(steps.len(), 3, "ranks not started as three steps:\n{}", r.stdout);
    eprintln!("salloc + mpirun took {:?}", r.took);
    drop(cluster);
}

/// mpirun in an allocation gets SIGTERM mid-job (one rank ignores it):
/// within a few seconds no rank is left in the allocation, which still
/// exists (the check runs inside it).
#[test]
fn ranks_started_with_srun_end_when_mpirun_is_terminated() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED ranks_started_with_srun_end_when_mpirun_is_terminated: {why}");
        return;
    }
    let cluster = match Cluster::start("term") {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED ranks_started_with_srun_end_when_mpirun_is_terminated: the Slurm daemons did not start: {why}");
            return;
        }
    };
    // A copy of the probe under a short name of its own, so `pgrep -x`
    // finds this test's ranks and nobody else's.
    let name = format!("psl{}", std::process::id());
    let probe = cluster.dir.join(&name);
    std::fs::copy(PROBE, &probe).expect("copy the probe");
    let out = cluster.dir.join("mpirun.out");
    // The file exists before mpirun starts: the background job opens it
    // itself, and the first grep could otherwise run first, fail, and end
    // the wait at once (seen: `ready=0`).
    let script = format!(
        r#": > {out}
{mpirun} {probe} ignore-term@1 exchange print:ready sleep:60 finalize > {out} 2>&1 &
m=$!
i=0
while [ "$(grep -c ready {out})" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo ready=$(grep -c ready {out}) before=$(pgrep -x {name} | wc -l)
kill -TERM $m
wait $m
echo mpirun=$?
i=0
while pgrep -x {name} >/dev/null && [ $i -lt 80 ]; do sleep 0.1; i=$((i+1)); done
echo left=$(pgrep -x {name} | wc -l)
"#,
        mpirun = MPIRUN,
        probe = probe.display(),
        out = out.display(),
    );
    let mut c = cluster.command("salloc");
    c.args(["-n", "3", "--time=1", "sh", "-c", &script]);
    let started = Instant::now();
    let r = finish(c.spawn().expect("salloc"), started);
    let log = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(r.stdout.contains("ready=3 before=3"), "stdout: {}\nstderr: {}\nmpirun: {log}", r.stdout, r.stderr);
    assert!(r.stdout.contains(&format!("mpirun={}", 128 + libc::SIGTERM)), "stdout: {}\nmpirun: {log}", r.stdout);
    assert!(r.stdout.contains("left=0"), "ranks outlived mpirun in the allocation: {}\nmpirun: {log}", r.stdout);
    drop(cluster);
}

/// `srun --mpi=pmi2 -n 3 hello`, no mpirun: MPI init finds PMI_FD and
/// bootstraps over Slurm's PMI-2 (shared memory on the one node under
/// `auto`, tcp with the job secret rank 0 drew when told).
#[test]
fn srun_with_pmi2_runs_an_unmodified_mpi_program() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED srun_with_pmi2_runs_an_unmodified_mpi_program: {why}");
        return;
    }
    let Some(hello) = std::path::Path::new(MPIRUN).parent().map(|d| d.join("hello")).filter(|p| p.is_file()) else {
        eprintln!("SKIPPED srun_with_pmi2_runs_an_unmodified_mpi_program: build the examples first (cargo build -p wanmpi-examples, same profile)");
        return;
    };
    let cluster = match Cluster::start("pmi2") {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED srun_with_pmi2_runs_an_unmodified_mpi_program: the Slurm daemons did not start: {why}");
            return;
        }
    };
    for transport in ["auto", "tcp"] {
        let mut c = cluster.command("srun");
        c.args(["--mpi=pmi2", "-n", "3", "--time=1"]).arg(&hello).env("WANMPI_TRANSPORT", transport);
        let started = Instant::now();
        let r = finish(c.spawn().expect("srun"), started);
        assert_eq!(r.code, Some(0), "{transport}: stdout: {}\nstderr: {}\n{}", r.stdout, r.stderr, cluster.logs());
        for rank in 0..3 {
            assert!(r.stdout.contains(&format!("hello from rank {rank} of 3")), "{transport}: {}", r.stdout);
        }
        assert!(r.stdout.contains("sum of ranks = 3 (expected 3)"), "{transport}: {}", r.stdout);
        eprintln!("srun --mpi=pmi2 over {transport} took {:?}", r.took);
    }
    drop(cluster);
}

/// `src` (a C file) built against wanmpi's libmpi.so.12 from
/// scripts/install-c, or `None` (with the reason) when that is not there.
fn build_c(src: &std::path::Path, name: &str) -> Result<std::path::PathBuf, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prefix = root.join("target/wanmpi");
    if !prefix.join("lib/libmpi.so.12").is_file() {
        return Err(format!("{} has no lib/libmpi.so.12 (run scripts/install-c)", prefix.display()));
    }
    let exe = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let lib = prefix.join("lib");
    let built = std::process::Command::new("cc")
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lmpi")
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cc {} against {}", src.display(), lib.display());
    Ok(exe)
}

/// A C program built against wanmpi's libmpi.so.12 (scripts/install-c),
/// started by `srun --mpi=pmi2`: the library's MPI_Init bootstraps over
/// PMI-2 as the Rust runtime does.
#[test]
fn srun_with_pmi2_runs_a_c_program_on_libmpi() {
    srun_runs_a_c_program("srun_with_pmi2_runs_a_c_program_on_libmpi", "pmi2");
}

/// The same with `srun --mpi=pmix` (Slurm's PMIx plugin, libpmix loaded by
/// the library at MPI_Init).
#[test]
fn srun_with_pmix_runs_a_c_program_on_libmpi() {
    srun_runs_a_c_program("srun_with_pmix_runs_a_c_program_on_libmpi", "pmix");
}

fn srun_runs_a_c_program(name: &str, mpi: &str) {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED {name}: {why}");
        return;
    }
    let plugin = std::path::Path::new("/usr/lib/x86_64-linux-gnu/slurm-wlm").join(format!("mpi_{mpi}.so"));
    if !plugin.is_file() {
        eprintln!("SKIPPED {name}: Slurm's {} is missing", plugin.display());
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let exe = match build_c(&root.join("examples/c/hello.c"), &format!("{mpi}-hello")) {
        Ok(e) => e,
        Err(why) => {
            eprintln!("SKIPPED {name}: {why}");
            return;
        }
    };
    let cluster = match Cluster::start(&format!("{mpi}c")) {
        Ok(c) => c,
        Err(why) => {
            let _ = std::fs::remove_file(&exe);
            eprintln!("SKIPPED {name}: the Slurm daemons did not start: {why}");
            return;
        }
    };
    let mut c = cluster.command("srun");
    c.arg(format!("--mpi={mpi}")).args(["-n", "3", "--time=1"]).arg(&exe);
    let started = Instant::now();
    let r = finish(c.spawn().expect("srun"), started);
    let _ = std::fs::remove_file(&exe);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}\n{}", r.stdout, r.stderr, cluster.logs());
    for rank in 0..3 {
        assert!(r.stdout.contains(&format!("hello from rank {rank} of 3")), "{}", r.stdout);
    }
    assert!(r.stdout.contains("sum of ranks = 3 (expected 3)"), "{}", r.stdout);
    eprintln!("srun --mpi={mpi} -n 3 hello took {:?}", r.took);
    drop(cluster);
}

/// MPI_Abort under `srun --mpi=pmi2` ends the whole step through PMI-2's
/// `abort`, while the other rank sleeps outside MPI for a minute.
#[test]
fn mpi_abort_under_pmi2_ends_the_step() {
    abort_ends_the_step("mpi_abort_under_pmi2_ends_the_step", "pmi2");
}

/// The same through PMIx_Abort under `srun --mpi=pmix`.
#[test]
fn mpi_abort_under_pmix_ends_the_step() {
    abort_ends_the_step("mpi_abort_under_pmix_ends_the_step", "pmix");
}

fn abort_ends_the_step(name: &str, mpi: &str) {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED {name}: {why}");
        return;
    }
    let src = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{mpi}-abort-{}.c", std::process::id()));
    let text = "#include <mpi.h>\n#include <unistd.h>\nint main(int c, char **v) { int r; MPI_Init(&c, &v); \
                MPI_Comm_rank(MPI_COMM_WORLD, &r); if (r == 1) MPI_Abort(MPI_COMM_WORLD, 7); sleep(60); MPI_Finalize(); return 0; }\n";
    std::fs::write(&src, text).expect("write the C file");
    let built = build_c(&src, &format!("{mpi}-abort"));
    let _ = std::fs::remove_file(&src);
    let exe = match built {
        Ok(e) => e,
        Err(why) => {
            eprintln!("SKIPPED {name}: {why}");
            return;
        }
    };
    let cluster = match Cluster::start(&format!("abort-{mpi}")) {
        Ok(c) => c,
        Err(why) => {
            let _ = std::fs::remove_file(&exe);
            eprintln!("SKIPPED {name}: the Slurm daemons did not start: {why}");
            return;
        }
    };
    let mut c = cluster.command("srun");
    c.arg(format!("--mpi={mpi}")).args(["-n", "2", "--time=2"]).arg(&exe);
    let started = Instant::now();
    let r = finish(c.spawn().expect("srun"), started);
    let _ = std::fs::remove_file(&exe);
    assert_ne!(r.code, Some(0), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.took < std::time::Duration::from_secs(20), "the step outlived MPI_Abort for {:?}: {}", r.took, r.stderr);
    assert!(r.stderr.contains("MPI_Abort called with code 7"), "{}", r.stderr);
    drop(cluster);
}

/// How many `ok rank R of 6 on HOST` lines, and on how many hosts.
fn oks(stdout: &str) -> (usize, usize) {
    let hosts: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("ok rank ") && l.contains(" of 6 on ")).filter_map(|l| l.rsplit(' ').next()).collect();
    let mut distinct = hosts.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (hosts.len(), distinct.len())
}

/// Every case on one cluster of 3 compute nodes (starting it is most of
/// the time): the program checks an allreduce, every pair's point-to-point,
/// a split and a 1 MiB bcast on 3 nodes x 2 ranks.
#[test]
fn three_nodes_run_srun_pmi2_salloc_sbatch_and_end_cleanly() {
    let name = "three_nodes_run_srun_pmi2_salloc_sbatch_and_end_cleanly";
    if let Some(why) = slurm_nodes::skip_reason() {
        eprintln!("SKIPPED {name}: {why}");
        return;
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm_nodes/check.c");
    let exe = match build_c(&src, "slurm-nodes-check") {
        Ok(e) => e,
        Err(why) => {
            eprintln!("SKIPPED {name}: {why}");
            return;
        }
    };
    /// The program goes however the test ends.
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _exe_goes = Remove(exe.clone());
    let test_began = Instant::now();
    let nodes = match slurm_nodes::Nodes::start("n") {
        Ok(n) => n,
        Err(why) => {
            eprintln!("SKIPPED {name}: the cluster did not start: {why}");
            return;
        }
    };
    eprintln!("3-node cluster up in {:?}", test_began.elapsed());
    let exe_s = exe.display().to_string();
    let check = |what: &str, r: &Run| {
        assert_eq!(r.code, Some(0), "{what}: stdout: {}\nstderr: {}\n{}", r.stdout, r.stderr, nodes.logs());
        assert_eq!(oks(&r.stdout), (6, 3), "{what}: 6 ranks on 3 nodes: {}\nstderr: {}", r.stdout, r.stderr);
        assert!(!r.stderr.contains("retrying"), "{what}: {}", r.stderr);
        eprintln!("{what} took {:?}", r.took);
        if r.took > std::time::Duration::from_secs(5) {
            eprintln!("{what}: slow; its stderr:\n{}", r.stderr);
        }
    };

    // srun with PMI-2 and no environment: each rank finds its address by
    // route toward the other nodes (before: 127.0.0.1, and a time-out).
    let mut c = nodes.client("srun");
    c.args(["-N3", "-n6", "--mpi=pmi2", "--time=1", &exe_s]);
    check("srun -N3 -n6 --mpi=pmi2", &finish(c.spawn().expect("srun"), Instant::now()));
    // The same over PMIx (Slurm's pmix plugin, the default at many sites).
    let mut c = nodes.client("srun");
    c.args(["-N3", "-n6", "--mpi=pmix", "--time=1", &exe_s]);
    check("srun -N3 -n6 --mpi=pmix", &finish(c.spawn().expect("srun"), Instant::now()));

    // WANMPI_NET is honoured; a network no node has fails at once, naming
    // the node and what it has.
    let mut c = nodes.client("srun");
    c.args(["-N3", "-n6", "--mpi=pmi2", "--time=1", "--export=ALL,WANMPI_NET=198.18.100.0/24", &exe_s]);
    check("srun -N3 -n6 --mpi=pmi2 with WANMPI_NET", &finish(c.spawn().expect("srun"), Instant::now()));
    let mut c = nodes.client("srun");
    c.args(["-N3", "-n6", "--mpi=pmi2", "--time=1", "--export=ALL,WANMPI_NET=10.9.0.0/16", &exe_s]);
    let r = finish(c.spawn().expect("srun"), Instant::now());
    assert_ne!(r.code, Some(0), "{}", r.stdout);
    assert!(r.stderr.contains("has no address in 10.9.0.0/16") && r.stderr.contains("eth0 198.18.100.1"), "{}", r.stderr);
    assert!(r.took < std::time::Duration::from_secs(15), "not at once: {:?}", r.took);

    // mpirun in an allocation of the three nodes.
    let mut c = nodes.client("salloc");
    c.args(["-N3", "-n6", "--time=1", MPIRUN, &exe_s]);
    check("salloc -N3 -n6 mpirun", &finish(c.spawn().expect("salloc"), Instant::now()));

    // A batch job, its output in the shared directory; its end watched
    // with scontrol (sbatch --wait polls every few seconds under load).
    let out = nodes.dir.join("sbatch.out");
    let mut c = nodes.client("sbatch");
    c.args(["-N3", "-n6", "--time=1", "--parsable", "-o"]).arg(&out).args(["--wrap", &format!("{MPIRUN} {exe_s}")]);
    let began = Instant::now();
    let r = finish(c.spawn().expect("sbatch"), began);
    let job = r.stdout.trim().split(';').next().unwrap_or_default().to_string();
    assert!(r.code == Some(0) && !job.is_empty(), "sbatch: {} {}", r.stdout, r.stderr);
    let state = nodes.wait_job(&job, std::time::Duration::from_secs(40));
    let r = Run {
        code: Some(if state == "COMPLETED" { 0 } else { 1 }),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: state,
        took: began.elapsed(),
    };
    check("sbatch -N3 -n6 (mpirun)", &r);

    // sctp on hosts given by hand (no site map from Slurm): the ranks of a
    // node share a site (the nodes may be one site or several, as their
    // measured round trips say); never a site per rank (was "6 sites").
    let agent = "srun --nodes=1 --ntasks=1 --nodelist={host} --overlap --cpu-bind=none --mpi=none --quiet";
    let mut c = nodes.client("salloc");
    c.args(["-N3", "-n6", "--time=1", MPIRUN, "--host", "wn1:2,wn2:2,wn3:2", "--launch-agent", agent, "--bootstrap", "tcp"]).args([
        "--transport",
        "sctp",
        "-x",
        "WANMPI_STATS=1",
        &exe_s,
    ]);
    let r = finish(c.spawn().expect("salloc"), Instant::now());
    check("salloc mpirun --transport sctp --host wn1:2,wn2:2,wn3:2", &r);
    let sites: Vec<&str> = r.stderr.lines().filter(|l| l.contains(" sites: ")).collect();
    eprintln!("sites under sctp: {sites:?}");
    let node_pairs_together = |l: &&str| {
        let map: Vec<&str> = l.split(" sites: ").nth(1).and_then(|m| m.split(' ').next()).unwrap_or_default().split(',').collect();
        map.len() == 6 && map.chunks(2).all(|node| node[0] == node[1])
    };
    // One site prints no map; several print one line per rank.
    assert!(sites.is_empty() || (sites.len() == 6 && sites.iter().all(node_pairs_together)), "{sites:?}");

    // Loopback on several nodes: at once an error naming rank, node, fix.
    let mut c = nodes.client("srun");
    c.args(["-N3", "-n6", "--mpi=pmi2", "--time=1", "--export=ALL,WANMPI_ADDR=127.0.0.1", &exe_s]);
    let r = finish(c.spawn().expect("srun"), Instant::now());
    assert_ne!(r.code, Some(0), "{}", r.stdout);
    assert!(r.stderr.contains("was given the loopback address 127.0.0.1, but the job spans 3 nodes"), "{}", r.stderr);
    assert!(r.stderr.contains("on node wn") && r.stderr.contains("WANMPI_NET"), "{}", r.stderr);
    assert!(r.took < std::time::Duration::from_secs(15), "not at once: {:?}", r.took);
    eprintln!("loopback on 3 nodes refused in {:?}", r.took);
    assert_eq!(nodes.wait_clean(std::time::Duration::from_secs(10)), Vec::<String>::new());

    // A rank killed by SIGKILL under salloc mpirun: reported as a signal.
    let mut c = nodes.client("salloc");
    c.args(["-N3", "-n6", "--time=1", MPIRUN, &exe_s, "die", "3"]);
    let r = finish(c.spawn().expect("salloc"), Instant::now());
    assert_eq!(r.code, Some(128 + 9), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("rank 3") && r.stderr.contains("killed by signal 9 (SIGKILL)"), "{}", r.stderr);
    assert!(!r.stderr.contains("exited with code 137"), "{}", r.stderr);
    assert_eq!(nodes.wait_clean(std::time::Duration::from_secs(10)), Vec::<String>::new(), "left after a killed rank");
    eprintln!("a killed rank ended the job in {:?}", r.took);

    // scancel of a running batch job: nothing left on any node.
    let out = nodes.dir.join("hang.out");
    let mut c = nodes.client("sbatch");
    c.args(["-N3", "-n6", "--time=1", "--parsable", "-o"]).arg(&out).args(["--wrap", &format!("{MPIRUN} {exe_s} hang")]);
    let r = finish(c.spawn().expect("sbatch"), Instant::now());
    let job = r.stdout.trim().split(';').next().unwrap_or_default().to_string();
    assert!(r.code == Some(0) && !job.is_empty(), "sbatch: {} {}", r.stdout, r.stderr);
    // Generous: on a machine shared with builds, a job start took 20 s once.
    let deadline = Instant::now() + std::time::Duration::from_secs(45);
    while std::fs::read_to_string(&out).unwrap_or_default().matches("ready rank").count() < 6 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default().matches("ready rank").count(), 6, "{}", nodes.logs());
    let cancelled = Instant::now();
    let r = finish(nodes.client("scancel").arg(&job).spawn().expect("scancel"), Instant::now());
    assert_eq!(r.code, Some(0), "scancel: {}", r.stderr);
    let left = nodes.wait_clean(std::time::Duration::from_secs(15));
    assert_eq!(left, Vec::<String>::new(), "left after scancel");
    eprintln!("scancel: nothing left on any node after {:?}", cancelled.elapsed());
    drop(nodes);
    eprintln!("{name}: {:?} in all", test_began.elapsed());
}

/// Start-up on 3 nodes x 2 ranks, side by side (the check program, end to
/// end, each launch's wall time through Slurm): `srun --mpi=pmi2` and
/// `--mpi=pmix`, `salloc mpirun`, and Open MPI's `srun --mpi=pmix` and
/// `salloc mpirun` when mpicc.openmpi is there. A measurement, not a check: runs only with
/// `WANMPI_SLURM_BENCH=N` (N runs of each) and prints the figures.
#[test]
fn bench_start_up_on_three_nodes() {
    let name = "bench_start_up_on_three_nodes";
    let Some(runs) = std::env::var("WANMPI_SLURM_BENCH").ok().and_then(|v| v.parse::<usize>().ok()).filter(|n| *n > 0) else {
        eprintln!("SKIPPED {name}: set WANMPI_SLURM_BENCH=N to measure");
        return;
    };
    if let Some(why) = slurm_nodes::skip_reason() {
        eprintln!("SKIPPED {name}: {why}");
        return;
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm_nodes/check.c");
    let exe = build_c(&src, "slurm-bench-check").expect("libmpi.so.12 (scripts/install-c)");
    let ompi = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("slurm-bench-ompi-{}", std::process::id()));
    let have_ompi = std::process::Command::new("mpicc.openmpi").arg("-o").arg(&ompi).arg(&src).status().is_ok_and(|s| s.success());
    let nodes = slurm_nodes::Nodes::start("b").expect("the cluster");
    let (exe_s, ompi_s) = (exe.display().to_string(), ompi.display().to_string());
    let mut cases: Vec<(&str, Vec<String>)> = vec![
        ("srun -N3 -n6 --mpi=pmi2 (wanmpi)", vec!["srun".into(), "-N3".into(), "-n6".into(), "--mpi=pmi2".into(), exe_s.clone()]),
        ("srun -N3 -n6 --mpi=pmix (wanmpi)", vec!["srun".into(), "-N3".into(), "-n6".into(), "--mpi=pmix".into(), exe_s.clone()]),
        ("salloc -N3 -n6 mpirun (wanmpi)", vec!["salloc".into(), "-N3".into(), "-n6".into(), MPIRUN.into(), exe_s.clone()]),
    ];
    if have_ompi {
        cases.push(("srun -N3 -n6 --mpi=pmix (Open MPI 4.1)", vec!["srun".into(), "-N3".into(), "-n6".into(), "--mpi=pmix".into(), ompi_s.clone()]));
        let ompi_run = ["mpirun.openmpi", "--allow-run-as-root", "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "198.18.100.0/24"];
        let mut words: Vec<String> = ["salloc", "-N3", "-n6"].iter().chain(ompi_run.iter()).map(|s| s.to_string()).collect();
        words.push(ompi_s.clone());
        cases.push(("salloc -N3 -n6 mpirun (Open MPI 4.1)", words));
    }
    for (what, words) in &cases {
        let mut times = Vec::new();
        for _ in 0..runs {
            let mut c = nodes.client(&words[0]);
            c.args(&words[1..]).env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            let r = finish(c.spawn().expect("client"), Instant::now());
            assert_eq!(r.code, Some(0), "{what}: {}\n{}", r.stdout, r.stderr);
            assert_eq!(oks(&r.stdout), (6, 3), "{what}: {}\n{}", r.stdout, r.stderr);
            times.push(r.took.as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        eprintln!("BENCH {what}: {runs} runs, min {:.3} s, median {:.3} s, max {:.3} s", times[0], times[times.len() / 2], times[times.len() - 1]);
    }
    drop(nodes);
    let _ = std::fs::remove_file(&exe);
    let _ = std::fs::remove_file(&ompi);
}
