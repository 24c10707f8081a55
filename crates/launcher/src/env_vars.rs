//! The environment every rank gets.

use crate::command::SECRET_FD;
use crate::error::LaunchError;
use crate::hosts::Placement;
use crate::spec::JobSpec;
use wanmpi_bootstrap::{ENV_ADDR, ENV_BOOTSTRAP, ENV_IF, ENV_JOB_ID, ENV_NET, ENV_RANK, ENV_SECRET, ENV_SECRET_FD, ENV_SIZE, ENV_TRANSPORT};

pub const ENV_EAGER_LIMIT: &str = "WANMPI_EAGER_LIMIT";
pub const ENV_PROGRESS_THREAD: &str = "WANMPI_PROGRESS_THREAD";
pub const ENV_TOLERATE: &str = "WANMPI_TOLERATE_RANK_FAILURE";
/// Host index of every rank, comma-separated in rank order.
pub const ENV_HOST_MAP: &str = wanmpi_bootstrap::ENV_HOST_MAP;
/// Set by `--insecure-lan`: tcp seals only connections between sites.
pub const ENV_INSECURE_LAN: &str = "WANMPI_INSECURE_LAN";
/// What carries traffic between sites under the auto transport.
pub const ENV_WAN_TRANSPORT: &str = "WANMPI_WAN_TRANSPORT";
/// Site index of every rank, when sites are known (hostfile `site=`,
/// emulated sites); else the ranks measure them.
pub const ENV_SITE_MAP: &str = "WANMPI_SITE_MAP";

/// An ordered list of variables where a later `set` replaces an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvList(pub Vec<(String, String)>);

impl EnvList {
    pub fn set(&mut self, k: &str, v: &str) {
        self.0.retain(|(name, _)| name != k);
        self.0.push((k.to_string(), v.to_string()));
    }
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `-x VAR` (value from `lookup`) or `-x VAR=value` / `--env VAR=value`.
pub fn parse_assignment(s: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<(String, String), LaunchError> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (s, None),
    };
    if !valid_name(name) {
        return Err(LaunchError::Usage(format!("{s:?}: not a variable name")));
    }
    let value = match value {
        Some(v) => v,
        None => lookup(name).ok_or_else(|| LaunchError::Usage(format!("-x {name}: {name} is not set in mpirun's environment")))?,
    };
    Ok((name.to_string(), value))
}

/// Variables shared by every rank, lowest precedence first: WANMPI_*
/// pass-through, the spec's extra variables, then the launcher's options.
pub fn common(spec: &JobSpec, own_env: &[(String, String)]) -> EnvList {
    let mut e = EnvList::default();
    if spec.pass_wanmpi_env {
        // A secret mpirun itself inherited (started from inside a rank by
        // hand) is never passed on: each job gets its own, on a pipe.
        let secret = |k: &str| k == ENV_SECRET || k == ENV_SECRET_FD;
        for (k, v) in own_env.iter().filter(|(k, _)| k.starts_with("WANMPI_") && !secret(k)) {
            e.set(k, v);
        }
    }
    for (k, v) in &spec.env {
        e.set(k, v);
    }
    let transport = spec.transport.clone().or_else(|| e.get(ENV_TRANSPORT).map(str::to_string)).unwrap_or_else(|| "auto".into());
    e.set(ENV_TRANSPORT, &transport);
    if let Some(w) = &spec.wan_transport {
        e.set(ENV_WAN_TRANSPORT, w);
    }
    if let Some(n) = spec.eager_limit {
        e.set(ENV_EAGER_LIMIT, &n.to_string());
    }
    if spec.progress_thread {
        e.set(ENV_PROGRESS_THREAD, "1");
    }
    if spec.tolerate_rank_failure {
        e.set(ENV_TOLERATE, "1");
    }
    if let Some(r) = spec.port_range {
        e.set(wanmpi_bootstrap::ENV_PORT_RANGE, &r.to_string());
    }
    if spec.insecure_lan {
        e.set(ENV_INSECURE_LAN, "1");
    }
    e
}

/// Everything a rank needs to join the job.
pub struct Identity<'a> {
    pub rank: u32,
    pub size: u32,
    pub bootstrap: &'a str,
    pub job_id: &'a str,
    /// Its host: the address it publishes, or how to choose one.
    pub place: &'a Placement,
}

/// How the rank chooses the address it publishes, highest first: the
/// host's `addr=` (`WANMPI_ADDR`); its `net=`/`if=`, which replace the
/// job's `--net`/`--if`; the job's; the host's name when that is an IP
/// address; else the rank's own route (`wanmpi_bootstrap::route`).
fn choose_addr(e: &mut EnvList, p: &Placement) {
    if p.net.is_some() || p.iface.is_some() {
        e.0.retain(|(k, _)| k != ENV_NET && k != ENV_IF);
        for (k, v) in [(ENV_NET, &p.net), (ENV_IF, &p.iface)] {
            if let Some(v) = v {
                e.set(k, v);
            }
        }
    }
    let implied = p.addr.as_deref() == Some(p.host.as_str());
    let chosen_by_net = e.get(ENV_NET).is_some() || e.get(ENV_IF).is_some();
    if let Some(a) = p.addr.as_deref().filter(|_| !(implied && chosen_by_net)) {
        e.set(ENV_ADDR, a);
    }
}

pub fn for_rank(common: &EnvList, id: &Identity) -> EnvList {
    let mut e = common.clone();
    choose_addr(&mut e, id.place);
    e.set(ENV_RANK, &id.rank.to_string());
    e.set(ENV_SIZE, &id.size.to_string());
    e.set(ENV_BOOTSTRAP, id.bootstrap);
    // Not the secret itself: where to read it (see `command`). `-x` or
    // `--env` cannot put a secret of their own in its place.
    e.0.retain(|(k, _)| k != ENV_SECRET);
    e.set(ENV_SECRET_FD, &SECRET_FD.to_string());
    e.set(ENV_JOB_ID, id.job_id);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments() {
        let look = |n: &str| (n == "HOME").then(|| "/root".to_string());
        assert_eq!(parse_assignment("A=1=2", look).unwrap(), ("A".into(), "1=2".into()));
        assert_eq!(parse_assignment("HOME", look).unwrap(), ("HOME".into(), "/root".into()));
        assert_eq!(parse_assignment("E=", look).unwrap(), ("E".into(), "".into()));
        assert!(parse_assignment("UNSET_ONE", look).is_err());
        assert!(parse_assignment("1X=2", look).is_err());
        assert!(parse_assignment("=2", look).is_err());
    }

    #[test]
    fn precedence_of_pass_through_user_and_launcher_values() {
        let mut spec = JobSpec::local("p", &[], 2);
        spec.env = vec![("WANMPI_EAGER_LIMIT".into(), "5".into()), ("FOO".into(), "bar".into())];
        spec.progress_thread = true;
        spec.tolerate_rank_failure = true;
        let own = vec![
            ("WANMPI_TRANSPORT".to_string(), "sctp".to_string()),
            ("WANMPI_SCTP_STREAMS".to_string(), "4".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            ("WANMPI_JOB_SECRET".to_string(), "00".repeat(32)),
            ("WANMPI_JOB_SECRET_FD".to_string(), "7".to_string()),
        ];
        let c = common(&spec, &own);
        assert_eq!(c.get("WANMPI_TRANSPORT"), Some("sctp"));
        assert_eq!(c.get("WANMPI_SCTP_STREAMS"), Some("4"));
        assert_eq!(c.get("PATH"), None);
        assert_eq!(c.get("WANMPI_JOB_SECRET"), None);
        assert_eq!(c.get("WANMPI_JOB_SECRET_FD"), None);
        assert_eq!(c.get("FOO"), Some("bar"));
        assert_eq!(c.get("WANMPI_EAGER_LIMIT"), Some("5"));
        assert_eq!(c.get("WANMPI_PROGRESS_THREAD"), Some("1"));
        assert_eq!(c.get("WANMPI_TOLERATE_RANK_FAILURE"), Some("1"));
        assert_eq!(c.get("WANMPI_INSECURE_LAN"), None, "sealed between hosts unless asked");
        spec.insecure_lan = true;
        assert_eq!(common(&spec, &own).get("WANMPI_INSECURE_LAN"), Some("1"));
        spec.transport = Some("wamp".into());
        spec.eager_limit = Some(100);
        let c = common(&spec, &own);
        assert_eq!(c.get("WANMPI_TRANSPORT"), Some("wamp"));
        assert_eq!(c.get("WANMPI_EAGER_LIMIT"), Some("100"));
        let place = Placement { host: "h2".into(), addr: Some("198.18.0.2".into()), ..Placement::default() };
        let r = for_rank(&c, &Identity { rank: 1, size: 2, bootstrap: "unix:/x", job_id: "j", place: &place });
        assert_eq!(r.get("WANMPI_RANK"), Some("1"));
        assert_eq!(r.get("WANMPI_JOB_SECRET_FD"), Some("3"));
        assert_eq!(r.get("WANMPI_JOB_SECRET"), None);
        assert_eq!(r.get("WANMPI_ADDR"), Some("198.18.0.2"));
        assert_eq!(common(&JobSpec::local("p", &[], 1), &[]).get("WANMPI_TRANSPORT"), Some("auto"));
    }

    #[test]
    fn addresses_by_host_then_job_then_name() {
        let mut job = EnvList::default();
        job.set(ENV_NET, "198.19.0.0/16");
        let addr_of = |job: &EnvList, host: &str, addr: Option<&str>, net: Option<&str>, iface: Option<&str>| {
            let p = Placement {
                host: host.into(),
                addr: addr.map(str::to_string),
                net: net.map(str::to_string),
                iface: iface.map(str::to_string),
                ..Placement::default()
            };
            let e = for_rank(job, &Identity { rank: 0, size: 1, bootstrap: "unix:/x", job_id: "j", place: &p });
            [ENV_ADDR, ENV_NET, ENV_IF].map(|k| e.get(k).map(str::to_string))
        };
        let s = |v: &str| Some(v.to_string());
        // The job's --net beats an address implied by the host's name...
        assert_eq!(addr_of(&job, "198.18.0.2", Some("198.18.0.2"), None, None), [None, s("198.19.0.0/16"), None]);
        // ...but not an explicit addr=.
        assert_eq!(addr_of(&job, "h2", Some("198.18.0.2"), None, None), [s("198.18.0.2"), s("198.19.0.0/16"), None]);
        // A host's if= replaces the job's --net.
        assert_eq!(addr_of(&job, "h2", None, None, Some("tun1")), [None, None, s("tun1")]);
        // Without any choice the name's address stays.
        let none = EnvList::default();
        assert_eq!(addr_of(&none, "198.18.0.2", Some("198.18.0.2"), None, None), [s("198.18.0.2"), None, None]);
        assert_eq!(addr_of(&none, "h3", None, Some("2001:2::/48"), None), [None, s("2001:2::/48"), None]);
    }
}
