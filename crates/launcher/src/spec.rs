//! What a job is (`JobSpec`) and how it ended (`JobOutcome`).

use crate::hosts::HostEntry;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// Where the key/value service listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootstrapChoice {
    /// Unix socket when every rank shares this machine's filesystem (local
    /// ranks, `{host}` agents such as `ip netns exec`), TCP otherwise.
    Auto,
    /// A Unix socket in a fresh private temporary directory.
    Unix,
    /// TCP on a free port (loopback when every rank is local).
    Tcp,
    /// An explicit `unix:/path` or `tcp:host:port`.
    Address(String),
}

/// What happens to the ranks' output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// To this process's stdout/stderr, line by line.
    Forward,
    /// Kept in `JobOutcome::output` (for programs that launch jobs).
    Capture,
}

/// One command of a job that runs several (the children of
/// MPI_Comm_spawn_multiple): `count` ranks in a row run it, with `env` on
/// top of the job's.
#[derive(Debug, Clone)]
pub struct App {
    pub program: String,
    pub args: Vec<String>,
    pub count: u32,
    pub env: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct JobSpec {
    pub program: String,
    pub args: Vec<String>,
    /// When not empty, rank by rank what runs instead of `program args`.
    pub apps: Vec<App>,
    /// Number of ranks; `None` means one per host slot.
    pub np: Option<u32>,
    /// Empty: every rank on this machine.
    pub hosts: Vec<HostEntry>,
    pub oversubscribe: bool,
    /// Runs a program on a named host: `ssh` (host appended) or a command
    /// with `{host}` in it, e.g. `ip netns exec {host}`.
    pub launch_agent: String,
    /// Words put right after `ssh` when the launch agent is ssh (`--ssh-args`).
    pub ssh_args: Vec<String>,
    /// Extra variables for every rank (`-x`, `--env`), after WANMPI_*
    /// pass-through and before the launcher's own.
    pub env: Vec<(String, String)>,
    /// Pass every WANMPI_* variable of this process to the ranks.
    pub pass_wanmpi_env: bool,
    pub tag_output: bool,
    pub timeout: Option<Duration>,
    /// `WANMPI_TRANSPORT`; `None`: this process's WANMPI_TRANSPORT, or auto.
    pub transport: Option<String>,
    /// `WANMPI_WAN_TRANSPORT` (auto's transport between sites); `None`: the
    /// ranks' default (wamp) or this process's variable.
    pub wan_transport: Option<String>,
    pub eager_limit: Option<u64>,
    pub progress_thread: bool,
    /// `WANMPI_TOLERATE_RANK_FAILURE=1`, and a failing rank does not end the
    /// job: the others go on (their operations with it fail with
    /// MPIX_ERR_PROC_FAILED) and the exit code comes from the survivors.
    pub tolerate_rank_failure: bool,
    pub bootstrap: BootstrapChoice,
    /// `WANMPI_PORT_RANGE`: every port the ranks and the key/value service
    /// bind to listen or receive on lies in it (`--port-range`); `None`:
    /// this process's variable if set, else any port.
    pub port_range: Option<wanmpi_bootstrap::PortRange>,
    /// `WANMPI_INSECURE_LAN=1` (`--insecure-lan`): the network inside a
    /// site is trusted, so tcp seals only connections between sites (by
    /// default every connection between hosts is sealed).
    pub insecure_lan: bool,
    /// How long a fence may wait; `None`: WANMPI_BOOTSTRAP_TIMEOUT or 120 s.
    pub bootstrap_timeout: Option<Duration>,
    pub output: OutputMode,
    /// Between SIGTERM and SIGKILL when ending ranks.
    pub grace: Duration,
    /// Set to a signal number (or any non-zero value) to end the job.
    pub cancel: Option<Arc<AtomicUsize>>,
    /// Copy the programs (and wanmpi's libmpi.so when they load it) to each
    /// remote host first, into a per-job directory removed at the end
    /// (`--stage`).
    pub stage: bool,
    /// A spawned job's: the secret of the port its ranks connect back to.
    /// It goes on each rank's secret pipe after the job secret (the rank
    /// has the rest of the name in `WANMPI_PARENT_PORT`), never in an
    /// environment or on a command line.
    pub parent_port_secret: Option<[u8; 32]>,
}

impl JobSpec {
    /// The launch agent as words: `launch_agent` split on whitespace, with
    /// `ssh_args` after the program when that program is ssh.
    pub fn agent_words(&self) -> Vec<String> {
        let mut words: Vec<String> = self.launch_agent.split_whitespace().map(str::to_string).collect();
        let is_ssh = words.first().is_some_and(|p| p.rsplit('/').next() == Some("ssh"));
        if is_ssh {
            words.splice(1..1, self.ssh_args.iter().cloned());
        }
        words
    }

    /// What rank `rank` runs: its app's command and variables.
    pub fn command_of(&self, rank: u32) -> (&str, &[String], &[(String, String)]) {
        let mut first = 0;
        for a in &self.apps {
            if rank < first + a.count {
                return (&a.program, &a.args, &a.env);
            }
            first += a.count;
        }
        (&self.program, &self.args, &[])
    }

    /// `np` copies of `program args` on this machine, with defaults.
    pub fn local(program: &str, args: &[&str], np: u32) -> JobSpec {
        JobSpec {
            program: program.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            apps: Vec::new(),
            np: Some(np),
            hosts: Vec::new(),
            oversubscribe: false,
            launch_agent: "ssh".into(),
            ssh_args: Vec::new(),
            env: Vec::new(),
            pass_wanmpi_env: true,
            tag_output: false,
            timeout: None,
            transport: None,
            wan_transport: None,
            eager_limit: None,
            progress_thread: false,
            tolerate_rank_failure: false,
            bootstrap: BootstrapChoice::Auto,
            port_range: None,
            insecure_lan: false,
            bootstrap_timeout: None,
            output: OutputMode::Forward,
            grace: Duration::from_secs(2),
            cancel: None,
            stage: false,
            parent_port_secret: None,
        }
    }
}

/// How one rank ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankEnd {
    Exited(i32),
    Signaled(i32),
    /// Still running when the launcher gave up waiting (should not happen).
    Unknown,
}

#[derive(Debug, Clone)]
pub struct RankResult {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    pub end: RankEnd,
    /// The rank connected to the key/value service (called MPI init).
    pub connected: bool,
    pub finalized: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    Stdout,
    Stderr,
}

/// A line (or a last partial line, without `\n`) of a rank's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    pub rank: u32,
    pub stream: StreamKind,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// What mpirun exits with: 0, the first failing rank's code, the abort
    /// code, 124 on timeout, 128+signal when mpirun itself was signalled.
    pub exit_code: i32,
    /// Why the job was ended early, as printed.
    pub failure: Option<String>,
    pub ranks: Vec<RankResult>,
    /// Launcher messages (failures, refused connections, warnings).
    pub messages: Vec<String>,
    /// Captured output, with `OutputMode::Capture`.
    pub output: Vec<OutputLine>,
    pub job_id: String,
}
