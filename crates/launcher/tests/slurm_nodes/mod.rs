//! A private Slurm cluster of four nodes on this machine, for tests: a
//! controller (`ctl`, also the login node the clients run on) and three
//! compute nodes (`wn1`..`wn3`), each in network, UTS, PID and mount
//! namespaces of its own, with its own /tmp, /dev/shm and run directory,
//! joined by a bridge on 198.18.100.0/24 and named in an /etc/hosts of
//! their own. Authentication is munge's (one munged per node, sharing a
//! key the test draws); the daemons are Debian's slurmctld and slurmd as
//! root, as in tests/slurm_site. The build tree is the shared directory, as
//! NFS would be. Each node's first process (a shell, PID 1 of its PID
//! namespace) waits on its daemons: killing it ends everything on the node,
//! so nothing outlives the value, whatever a test left running.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const COMPUTE: [&str; 3] = ["wn1", "wn2", "wn3"];
const PLUGINS: &str = "/usr/lib/x86_64-linux-gnu/slurm-wlm";
const NET: &str = "198.18.100";

/// Why the cluster cannot be made here, if it cannot.
pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (namespaces, slurmd runs jobs as their user)".into());
    }
    for bin in [
        "/usr/sbin/slurmctld",
        "/usr/sbin/slurmd",
        "/usr/bin/srun",
        "/usr/bin/salloc",
        "/usr/bin/sbatch",
        "/usr/bin/scancel",
        "/usr/sbin/munged",
        "/usr/bin/unshare",
        "/usr/bin/nsenter",
    ] {
        if !Path::new(bin).is_file() {
            return Some(format!("{bin} is missing (apt-get install slurm-wlm munge util-linux)"));
        }
    }
    for plugin in ["auth_munge.so", "cred_munge.so", "mpi_pmi2.so", "mpi_pmix.so"] {
        if !Path::new(PLUGINS).join(plugin).is_file() {
            return Some(format!("Slurm's {plugin} is missing in {PLUGINS}"));
        }
    }
    None
}

/// One node: its network namespace and the `unshare` whose child is the
/// node's PID 1.
struct Node {
    name: String,
    netns: String,
    addr: String,
    unshare: Option<Child>,
    init: i32,
}

pub struct Nodes {
    nodes: Vec<Node>,
    pub dir: PathBuf,
    pub conf: PathBuf,
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0]).args(&args[1..]).stdin(Stdio::null()).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// The first child of `pid` (unshare's forked PID 1), waited for at most 5 s.
fn child_of(pid: u32) -> Result<i32, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(c) = text.split_whitespace().next().and_then(|c| c.parse().ok()) {
            return Ok(c);
        }
        if Instant::now() >= deadline {
            return Err(format!("unshare {pid} started no node within 5 s"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Nodes {
    /// The namespaces, munge and the daemons; waits (at most 30 s) until
    /// the three compute nodes are idle. `Err` says why not.
    pub fn start(tag: &str) -> Result<Nodes, String> {
        let id = format!("{}{tag}", std::process::id());
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wanmpi-slurm-nodes-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["state", "run", "spool-wn1", "spool-wn2", "spool-wn3", "spool-ctl"] {
            std::fs::create_dir_all(dir.join(d)).map_err(|e| e.to_string())?;
        }
        let names: Vec<String> = std::iter::once("ctl").chain(COMPUTE).map(str::to_string).collect();
        let mut nodes = Nodes {
            nodes: names
                .iter()
                .enumerate()
                .map(|(i, n)| Node {
                    name: n.clone(),
                    netns: format!("wsl{id}{n}"),
                    addr: format!("{NET}.{}", if i == 0 { 1 } else { 10 + i }),
                    unshare: None,
                    init: 0,
                })
                .collect(),
            conf: dir.join("slurm.conf"),
            dir,
        };
        nodes.network()?;
        nodes.files()?;
        for i in 0..nodes.nodes.len() {
            nodes.boot(i)?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = nodes.client("sinfo").args(["-h", "-o", "%n %t"]).output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if COMPUTE.iter().all(|n| text.lines().any(|l| l.trim() == format!("{n} idle"))) {
                return Ok(nodes);
            }
            if Instant::now() >= deadline {
                return Err(format!("the nodes were not idle within 30 s: {text:?}\n{}", nodes.logs()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A bridge in the controller's namespace, a veth from each compute node.
    fn network(&self) -> Result<(), String> {
        for n in &self.nodes {
            run(&["ip", "netns", "add", &n.netns])?;
            run(&["ip", "-n", &n.netns, "link", "set", "lo", "up"])?;
        }
        let ctl = &self.nodes[0].netns;
        run(&["ip", "-n", ctl, "link", "add", "br0", "type", "bridge"])?;
        run(&["ip", "-n", ctl, "addr", "add", &format!("{}/24", self.nodes[0].addr), "dev", "br0"])?;
        run(&["ip", "-n", ctl, "link", "set", "br0", "up"])?;
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            let port = format!("p{i}");
            run(&["ip", "-n", ctl, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &n.netns])?;
            run(&["ip", "-n", ctl, "link", "set", &port, "master", "br0", "up"])?;
            run(&["ip", "-n", &n.netns, "addr", "add", &format!("{}/24", n.addr), "dev", "eth0"])?;
            run(&["ip", "-n", &n.netns, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// The munge key, /etc/hosts and slurm.conf every node shares.
    fn files(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let mut key = [0u8; 1024];
        getrandom::getrandom(&mut key).map_err(|e| e.to_string())?;
        let key_path = self.dir.join("munge.key");
        std::fs::write(&key_path, key).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o400)).map_err(|e| e.to_string())?;
        let hosts: String =
            std::iter::once("127.0.0.1 localhost\n".to_string()).chain(self.nodes.iter().map(|n| format!("{} {}\n", n.addr, n.name))).collect();
        std::fs::write(self.dir.join("hosts"), hosts).map_err(|e| e.to_string())?;
        let p = |f: &str| self.dir.join(f).display().to_string();
        let mut text = vec![
            "ClusterName=wanmpinodes".to_string(),
            format!("SlurmctldHost=ctl({})", self.nodes[0].addr),
            "SlurmUser=root".into(),
            "SlurmdUser=root".into(),
            "SlurmctldPort=6817".into(),
            "SlurmdPort=6818".into(),
            "AuthType=auth/munge".into(),
            "CredType=cred/munge".into(),
            format!("AuthInfo=socket={}", p("run/munge.sock")),
            format!("StateSaveLocation={}", p("state")),
            format!("SlurmdSpoolDir={}", p("spool-%n")),
            format!("SlurmctldPidFile={}", p("run/slurmctld.pid")),
            format!("SlurmdPidFile={}", p("run/slurmd.pid")),
            format!("SlurmctldLogFile={}", p("slurmctld.log")),
            format!("SlurmdLogFile={}", p("slurmd-%n.log")),
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
            "MessageTimeout=5".into(),
        ];
        for n in &self.nodes[1..] {
            text.push(format!("NodeName={} NodeAddr={} CPUs=2 State=UNKNOWN", n.name, n.addr));
        }
        text.push(format!("PartitionName=wanmpi Nodes={} Default=YES MaxTime=10 State=UP OverSubscribe=YES", COMPUTE.join(",")));
        std::fs::write(&self.conf, text.join("\n") + "\n").map_err(|e| e.to_string())
    }

    /// Node `i`'s PID 1: its host name and private mounts, munged, then
    /// its Slurm daemon, both waited on.
    fn boot(&mut self, i: usize) -> Result<(), String> {
        let n = &self.nodes[i];
        let d = self.dir.display();
        let daemon = if i == 0 { "/usr/sbin/slurmctld -D -i".to_string() } else { format!("/usr/sbin/slurmd -D -N {}", n.name) };
        let script = format!(
            "hostname {name}
mount -t tmpfs -o mode=1777 wanmpi-node-tmp /tmp && mount -t tmpfs -o mode=1777 wanmpi-node-shm /dev/shm && \
mount -t tmpfs -o mode=755 wanmpi-node-run {d}/run && mount --bind {d}/hosts /etc/hosts || exit 1
/usr/sbin/munged -F -f --key-file={d}/munge.key --socket={d}/run/munge.sock --pid-file={d}/run/munged.pid \
 --seed-file={d}/run/munged.seed --log-file={d}/run/munged.log > {d}/munged-{name}.out 2>&1 &
i=0; while [ ! -S {d}/run/munge.sock ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
SLURM_CONF={d}/slurm.conf {daemon} > {d}/{name}.out 2>&1 &
wait",
            name = n.name,
        );
        // nsenter, not `ip netns exec`: that mounts a /sys of the network
        // namespace, without the cgroup file systems slurmd looks for.
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", n.netns))
            .args(["unshare", "--uts", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start node {}: {e}", n.name))?;
        let init = child_of(child.id())?;
        let n = &mut self.nodes[i];
        n.unshare = Some(child);
        n.init = init;
        Ok(())
    }

    fn enter(&self, node: &str, program: &str) -> Command {
        let n = self.nodes.iter().find(|n| n.name == node).expect("a node of the cluster");
        let mut c = Command::new("nsenter");
        c.args(["-t", &n.init.to_string(), "-n", "-m", "-u", "-p", "--", program]);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SLURM_") || k.starts_with("WANMPI_")) {
            c.env_remove(k);
        }
        c.env("SLURM_CONF", &self.conf).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    /// A Slurm client command (srun, salloc, sbatch...) on the login node
    /// (the controller), with no Slurm or wanmpi variables of the test's.
    pub fn client(&self, program: &str) -> Command {
        self.enter("ctl", program)
    }

    /// Processes on `node` other than its PID 1 and daemons (what a job
    /// left), as `pid comm` lines of that node's own process table.
    pub fn leftovers(&self, node: &str) -> Vec<String> {
        let n = self.nodes.iter().find(|n| n.name == node).expect("a node of the cluster");
        let Ok(ns) = std::fs::read_link(format!("/proc/{}/ns/pid", n.init)) else { return vec!["the node is gone".into()] };
        let Ok(procs) = std::fs::read_dir("/proc") else { return Vec::new() };
        procs
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| *pid != n.init && std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|l| l == ns))
            .filter_map(|pid| {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_string();
                (!matches!(comm.as_str(), "munged" | "slurmd" | "slurmctld")).then(|| format!("{pid} {comm}"))
            })
            .collect()
    }

    /// Waits (at most `limit`) until no node has a leftover; what is left.
    pub fn wait_clean(&self, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let left: Vec<String> = COMPUTE.iter().flat_map(|n| self.leftovers(n).into_iter().map(move |l| format!("{n}: {l}"))).collect();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (at most `limit`) for job `id` to end; its final state
    /// (`COMPLETED`, `FAILED`, ...) or what it was at the limit.
    pub fn wait_job(&self, id: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let out = self.client("scontrol").args(["show", "job", id]).output().map(|o| o.stdout).unwrap_or_default();
            let text = String::from_utf8_lossy(&out);
            let state = text.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).unwrap_or("UNKNOWN").to_string();
            let ended = !matches!(state.as_str(), "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "UNKNOWN");
            if ended || Instant::now() >= deadline {
                return state;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn logs(&self) -> String {
        let mut files = vec!["slurmctld.log".to_string(), "ctl.out".into(), "munged-ctl.out".into()];
        for n in COMPUTE {
            files.extend([format!("slurmd-{n}.log"), format!("{n}.out"), format!("munged-{n}.out")]);
        }
        files.iter().map(|f| format!("--- {f}\n{}", std::fs::read_to_string(self.dir.join(f)).unwrap_or_default())).collect()
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        // Jobs first, so the controller is not left with running steps in
        // its saved state, then every node at once: its PID 1's death ends
        // every process of its namespace.
        if self.nodes.iter().all(|n| n.init > 0) {
            if let Ok(mut c) = self.client("scancel").args(["--full", "--partition=wanmpi"]).spawn() {
                let deadline = Instant::now() + Duration::from_secs(5);
                while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for n in &mut self.nodes {
            if n.init > 0 {
                // SAFETY: SIGKILL to the PID 1 this value's unshare forked.
                unsafe { libc::kill(n.init, libc::SIGKILL) };
            }
            if let Some(mut u) = n.unshare.take() {
                let deadline = Instant::now() + Duration::from_secs(5);
                while matches!(u.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = u.kill();
                let _ = u.wait();
            }
        }
        for n in &self.nodes {
            let _ = run(&["ip", "netns", "del", &n.netns]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
