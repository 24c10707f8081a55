//! mpirun inside a Slurm allocation (`salloc`, `sbatch`): with no hosts
//! given, the hosts and their slots come from the allocation
//! (`SLURM_JOB_NODELIST`, expanded by `scontrol show hostnames`, and
//! `SLURM_TASKS_PER_NODE`), and ranks on other nodes start as job steps
//! with `srun` instead of ssh, as Open MPI's plm/slurm starts its daemons:
//! one single-task step per rank, pinned to its node, sharing the
//! allocation's CPUs with the other steps (`--overlap`), unbound, and
//! without Slurm's own MPI plugin (the rank's bootstrap is mpirun's).
//! srun passes its stdin (the job secret) to the task, forwards SIGTERM to
//! it, and its step ends when srun does. The allocation's nodes are one
//! site; a step's 128+N exit is the rank's death by signal N
//! (`step_status`).

use crate::error::LaunchError;
use crate::hosts::HostEntry;
use crate::spec::{BootstrapChoice, JobSpec};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The launch agent for a rank on another node of the allocation.
pub const SRUN_AGENT: &str = "srun --nodes=1 --ntasks=1 --nodelist={host} --overlap --cpu-bind=none --mpi=none --quiet";

/// How long expanding the node list may take.
const SCONTROL_LIMIT: Duration = Duration::from_secs(10);

/// The job as it runs in the allocation `lookup` describes (the process's
/// environment), or `None` when it is not in one, or says where to run.
/// The allocation is used when no hosts are given; srun replaces the
/// default agent (ssh), not one the user chose.
pub fn adopt(spec: &JobSpec, lookup: impl Fn(&str) -> Option<String>) -> Result<Option<JobSpec>, LaunchError> {
    let (Some(_job), Some(nodes)) = (lookup("SLURM_JOB_ID"), lookup("SLURM_JOB_NODELIST")) else { return Ok(None) };
    if !spec.hosts.is_empty() {
        return Ok(None);
    }
    let per_node = lookup("SLURM_TASKS_PER_NODE")
        .or_else(|| lookup("SLURM_JOB_CPUS_PER_NODE"))
        .ok_or_else(|| LaunchError::Usage("in a Slurm allocation without SLURM_TASKS_PER_NODE: give --host or --hostfile".into()))?;
    let slots = expand_counts(&per_node).map_err(|e| LaunchError::Usage(format!("SLURM_TASKS_PER_NODE={per_node:?}: {e}")))?;
    let names = hostnames(&nodes)?;
    if names.len() != slots.len() {
        return Err(LaunchError::Usage(format!(
            "the Slurm allocation names {} nodes ({nodes}) but SLURM_TASKS_PER_NODE={per_node} counts {}",
            names.len(),
            slots.len()
        )));
    }
    let mut s = spec.clone();
    // The allocation's nodes are one cluster: one site (near each other,
    // tcp between them under `auto`), named after the cluster.
    let site = lookup("SLURM_CLUSTER_NAME").filter(|n| !n.is_empty()).unwrap_or_else(|| "slurm".into());
    s.hosts =
        names.iter().zip(&slots).filter(|(_, n)| **n > 0).map(|(h, n)| HostEntry { site: Some(site.clone()), ..HostEntry::new(h, *n) }).collect();
    if s.launch_agent == "ssh" {
        s.launch_agent = SRUN_AGENT.into();
        // Other nodes do not share this one's /tmp: the key/value service
        // listens on TCP (`auto` would take srun's `{host}` for a local agent).
        if s.bootstrap == BootstrapChoice::Auto {
            s.bootstrap = BootstrapChoice::Tcp;
        }
    }
    Ok(Some(s))
}

/// A rank's end as its srun step reports it: srun exits with 128+N when
/// its task was killed by signal N (srun(1), "EXIT CODE"), so a rank
/// started by srun (`argv0`) that exited with 129 to 192 was killed by
/// that signal, and is reported so ("killed by signal 9 (SIGKILL)", not
/// "exited with code 137"). Other agents' statuses pass unchanged.
pub fn step_status(argv0: &str, status: ExitStatus) -> ExitStatus {
    let by_srun = std::path::Path::new(argv0).file_name().is_some_and(|n| n == "srun");
    match status.code() {
        // A wait status whose low seven bits are N: killed by signal N.
        Some(c @ 129..=192) if by_srun => ExitStatus::from_raw(c - 128),
        _ => status,
    }
}

/// `2(x3),1` -> [2, 2, 2, 1]: Slurm's per-node counts.
pub fn expand_counts(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let (n, times) = match part.split_once("(x") {
            Some((n, rest)) => (n, rest.strip_suffix(')').ok_or_else(|| format!("{part:?}: expected N(xM)"))?),
            None => (part, "1"),
        };
        let n: u32 = n.parse().map_err(|_| format!("{part:?}: {n:?} is not a count"))?;
        let times: usize = times.parse().map_err(|_| format!("{part:?}: {times:?} is not a repeat count"))?;
        out.extend(std::iter::repeat_n(n, times));
    }
    Ok(out)
}

/// Slurm's compressed host list (`node[1-3,7],gw`) expanded by Slurm
/// itself.
fn hostnames(list: &str) -> Result<Vec<String>, LaunchError> {
    let fail = |why: String| LaunchError::Usage(format!("cannot expand SLURM_JOB_NODELIST={list:?} with scontrol: {why}"));
    let mut child = Command::new("scontrol")
        .args(["show", "hostnames", list])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let deadline = Instant::now() + SCONTROL_LIMIT;
    while matches!(child.try_wait(), Ok(None)) {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(format!("no answer within {} s", SCONTROL_LIMIT.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect();
    if names.is_empty() {
        return Err(fail("no hosts".into()));
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_node_counts_expand() {
        assert_eq!(expand_counts("2(x3),1").unwrap(), vec![2, 2, 2, 1]);
        assert_eq!(expand_counts("4").unwrap(), vec![4]);
        assert_eq!(expand_counts("1,2(x2)").unwrap(), vec![1, 2, 2]);
        for bad in ["", "x", "2(x", "2(xy)", "-1"] {
            assert!(expand_counts(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_step_killed_by_a_signal_is_reported_so() {
        let exited = |c: i32| ExitStatus::from_raw(c << 8);
        let st = step_status("srun", exited(137));
        assert_eq!((st.code(), st.signal()), (None, Some(9)));
        assert_eq!(step_status("/usr/bin/srun", exited(143)).signal(), Some(15));
        assert_eq!(step_status("srun", exited(3)).code(), Some(3));
        assert_eq!(step_status("srun", exited(200)).code(), Some(200), "not a signal's number");
        assert_eq!(step_status("ssh", exited(137)).code(), Some(137), "other agents unchanged");
    }

    #[test]
    fn outside_an_allocation_or_with_hosts_nothing_changes() {
        let spec = JobSpec::local("p", &[], 2);
        assert!(adopt(&spec, |_| None).unwrap().is_none());
        let mut with_hosts = spec.clone();
        with_hosts.hosts = vec![HostEntry::new("a", 1)];
        let in_job = |k: &str| matches!(k, "SLURM_JOB_ID" | "SLURM_JOB_NODELIST" | "SLURM_TASKS_PER_NODE").then(|| "1".to_string());
        assert!(adopt(&with_hosts, in_job).unwrap().is_none());
    }
}
