//! A private Slurm cluster of one node on this machine, for tests: Debian's
//! slurm-wlm daemons (slurmctld, slurmd) as root with a configuration,
//! state and logs of their own under cargo's target tmp directory, fresh
//! ports on loopback, and no munge (`auth/none`, `cred/none`: every
//! daemon and client is this machine's root). The node has a name of its
//! own (not this machine's host name), so mpirun sees it as a remote host.
//! Everything is stopped by PID and removed when the value drops.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NODE: &str = "wanmpi-slurm-node";
const PLUGINS: &str = "/usr/lib/x86_64-linux-gnu/slurm-wlm";

pub struct Cluster {
    daemons: Vec<Child>,
    pub dir: PathBuf,
    pub conf: PathBuf,
}

/// Why the test cannot run here, if it cannot.
pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (slurmd runs jobs as their user)".into());
    }
    for bin in ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun", "/usr/bin/salloc", "/usr/bin/scontrol", "/usr/bin/sinfo"] {
        if !Path::new(bin).is_file() {
            return Some(format!("{bin} is missing (apt-get install slurm-wlm)"));
        }
    }
    for plugin in ["auth_none.so", "cred_none.so", "mpi_pmi2.so"] {
        if !Path::new(PLUGINS).join(plugin).is_file() {
            return Some(format!("Slurm's {plugin} is missing in {PLUGINS}"));
        }
    }
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

impl Cluster {
    /// Starts the daemons and waits (at most 20 s) until the node is idle;
    /// `Err` says why not.
    pub fn start(name: &str) -> Result<Cluster, String> {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wanmpi-slurm-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["state", "spool", "tmp"] {
            std::fs::create_dir_all(dir.join(d)).map_err(|e| e.to_string())?;
        }
        let host = wanmpi_launcher::hosts::own_hostname();
        let p = |f: &str| dir.join(f).display().to_string();
        let text = [
            "ClusterName=wanmpitest".to_string(),
            format!("SlurmctldHost={host}(127.0.0.1)"),
            "SlurmUser=root".into(),
            "SlurmdUser=root".into(),
            format!("SlurmctldPort={}", free_port()),
            format!("SlurmdPort={}", free_port()),
            "AuthType=auth/none".into(),
            "CredType=cred/none".into(),
            format!("StateSaveLocation={}", p("state")),
            format!("SlurmdSpoolDir={}", p("spool")),
            // The pmix plugin's per-step directories live under TmpFS
            // (/tmp by default): clusters of parallel tests would share them.
            format!("TmpFS={}", p("tmp")),
            format!("SlurmctldPidFile={}", p("slurmctld.pid")),
            format!("SlurmdPidFile={}", p("slurmd.pid")),
            format!("SlurmctldLogFile={}", p("slurmctld.log")),
            format!("SlurmdLogFile={}", p("slurmd.log")),
            "ProctrackType=proctrack/pgid".into(),
            "TaskPlugin=task/none".into(),
            "JobAcctGatherType=jobacct_gather/none".into(),
            "SelectType=select/cons_tres".into(),
            "SelectTypeParameters=CR_CPU".into(),
            "MpiDefault=none".into(),
            "ReturnToService=2".into(),
            "SlurmdParameters=config_overrides".into(),
            "SchedulerType=sched/builtin".into(),
            "KillWait=2".into(),
            format!("NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN"),
            format!("PartitionName=wanmpi Nodes={NODE} Default=YES MaxTime=10 State=UP OverSubscribe=YES"),
        ]
        .join("\n");
        let conf = dir.join("slurm.conf");
        std::fs::write(&conf, text + "\n").map_err(|e| e.to_string())?;
        let mut cluster = Cluster { daemons: Vec::new(), dir, conf };
        for (bin, args) in [("/usr/sbin/slurmctld", vec!["-D", "-i"]), ("/usr/sbin/slurmd", vec!["-D", "-N", NODE])] {
            let log = std::fs::File::create(cluster.dir.join(format!("{}.out", &bin[10..]))).map_err(|e| e.to_string())?;
            let child = Command::new(bin)
                .args(args)
                .env("SLURM_CONF", &cluster.conf)
                .stdin(Stdio::null())
                .stdout(log.try_clone().map_err(|e| e.to_string())?)
                .stderr(log)
                .spawn()
                .map_err(|e| format!("{bin}: {e}"))?;
            cluster.daemons.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = cluster.command("sinfo").args(["-h", "-o", "%t", "-n", NODE]).output().map_err(|e| e.to_string())?;
            if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
                return Ok(cluster);
            }
            if Instant::now() >= deadline {
                return Err(format!("the Slurm node was not idle within 20 s; logs in {}: {}", cluster.dir.display(), cluster.logs()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A Slurm client command (srun, salloc, sinfo...) for this cluster,
    /// with no Slurm variables of the test's own environment.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SLURM_") || k.starts_with("WANMPI_")) {
            c.env_remove(k);
        }
        c.env("SLURM_CONF", &self.conf).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    pub fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"]
            .iter()
            .map(|f| format!("--- {f}\n{}", std::fs::read_to_string(self.dir.join(f)).unwrap_or_default()))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their steps end with them), then the daemons.
        if let Ok(mut c) = self.command("scancel").args(["--full", "--partition=wanmpi"]).spawn() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        // Steps end with their job, within KillWait (2 s).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.stepds().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        for d in self.daemons.iter_mut().rev() {
            // SAFETY: SIGTERM to a daemon this value started.
            unsafe { libc::kill(d.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(d.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        // A step daemon that outlived its slurmd (a test that failed
        // mid-job) would wait for it a long time.
        for pid in self.stepds() {
            // SAFETY: SIGKILL to a slurmstepd of this cluster (it holds our log).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cluster {
    /// The slurmstepd processes of this cluster: those holding a file in
    /// its directory (the slurmd log they inherit).
    fn stepds(&self) -> Vec<i32> {
        let Ok(procs) = std::fs::read_dir("/proc") else { return Vec::new() };
        procs
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "slurmstepd"))
            .filter(|pid| {
                std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|fds| fds.filter_map(|f| std::fs::read_link(f.ok()?.path()).ok()).any(|l| l.starts_with(&self.dir)))
                    .unwrap_or(false)
            })
            .collect()
    }
}
