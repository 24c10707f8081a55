//! Jobs a rank asked for (MPI_Comm_spawn): each runs as a job of its own
//! (its own key/value service and secret) from this mpirun, on a thread,
//! and connects back to the port named in the request. mpirun ends only
//! after them; a failure of theirs is the job's failure.

use crate::hosts::HostEntry;
use crate::spec::{App, JobOutcome, JobSpec};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use wanmpi_bootstrap::port::PortName;
use wanmpi_bootstrap::{SpawnRequest, ENV_APPNUM, ENV_PARENT_PORT, ENV_WDIR};

struct Child {
    from: u32,
    cancel: Arc<AtomicUsize>,
    /// The job's result, and whether its failure went to the parent as the
    /// spawn's error (then the program has handled it; it is no failure of
    /// the job).
    handle: JoinHandle<(Result<JobOutcome, String>, bool)>,
}

#[derive(Default)]
pub(crate) struct Children {
    running: Vec<Child>,
    /// The parent job's key/value table: why a spawn failed goes there too,
    /// for a parent this process cannot reach on its port.
    pub notes: Option<wanmpi_bootstrap::Notes>,
}

impl Children {
    /// Starts `req` for rank `from` of the job `parent` on a thread.
    pub fn start(&mut self, parent: &JobSpec, from: u32, req: SpawnRequest) -> Result<(), String> {
        let cancel = Arc::new(AtomicUsize::new(0));
        let spec = child_spec(parent, &req, cancel.clone());
        let notes = self.notes.clone();
        let handle = std::thread::Builder::new()
            .name(format!("spawn-from-{from}"))
            .spawn(move || {
                let result = super::run(&spec).map_err(|e| e.to_string());
                let unmet = match &result {
                    Err(e) => Some(format!("the spawned processes could not start: {e}")),
                    Ok(o) if o.ranks.iter().any(|r| !r.connected) => {
                        Some(format!("the spawned processes ended before joining: {}", o.failure.clone().unwrap_or_else(|| "they exited".into())))
                    }
                    Ok(_) => None,
                };
                // A parent still waiting learns why, on its port or, where
                // that is out of reach, from the job's table; one that
                // stopped waiting has closed the port and reads no more.
                let told = unmet.is_some_and(|text| {
                    let noted =
                        notes.is_some_and(|n| n.put(&wanmpi_bootstrap::failure_key(&req.port), &wanmpi_bootstrap::failure_note(&text)).is_ok());
                    wanmpi_bootstrap::port::report_failure(&req.port, &text, Duration::from_secs(5)).is_ok() || noted
                });
                (result, told)
            })
            .map_err(|e| format!("no thread for a spawn: {e}"))?;
        self.running.push(Child { from, cancel, handle });
        Ok(())
    }

    /// Ends every spawned job (the parent job failed).
    pub fn cancel(&self) {
        for c in &self.running {
            c.cancel.store(libc::SIGTERM as usize, Ordering::SeqCst);
        }
    }

    /// Waits for every spawned job (each bounded by its own timeout, if
    /// any) and folds its result into the parent's outcome.
    pub fn finish(&mut self, outcome: &mut JobOutcome, say: &mut dyn FnMut(String)) {
        for c in self.running.drain(..) {
            let (result, told) = c.handle.join().unwrap_or_else(|_| (Err("the thread running it panicked".into()), false));
            let failure = match result {
                Ok(mut o) => {
                    outcome.output.append(&mut o.output);
                    outcome.messages.append(&mut o.messages);
                    o.failure.map(|f| (f, o.exit_code))
                }
                Err(e) => Some((e, 1)),
            };
            if let Some((text, code)) = failure {
                if told {
                    say(format!("warning: the processes rank {} spawned did not start (the spawn returned MPI_ERR_SPAWN): {text}", c.from));
                    continue;
                }
                let text = format!("the job spawned by rank {} failed: {text}", c.from);
                say(text.clone());
                if outcome.exit_code == 0 {
                    outcome.exit_code = if code == 0 { 1 } else { code };
                    outcome.failure = Some(text);
                }
            }
        }
    }
}

/// The parent's settings, the request's commands, placement and variables.
/// The port's name goes to the children in two parts: the public one in
/// their environment, the secret on their secret pipe (`parent_port_secret`),
/// so no command line (an agent's, the far side's shell) and no environment
/// holds it.
fn child_spec(parent: &JobSpec, req: &SpawnRequest, cancel: Arc<AtomicUsize>) -> JobSpec {
    let mut spec = parent.clone();
    spec.cancel = Some(cancel);
    let (public, secret) = match PortName::parse(&req.port) {
        Ok(p) => (p.public(), Some(p.secret)),
        // Not a port name: the children say so when they connect.
        Err(_) => (String::new(), None),
    };
    spec.parent_port_secret = secret;
    spec.np = Some(req.total());
    // More processes than slots is what spawning usually means.
    spec.oversubscribe = true;
    if req.apps.iter().any(|a| a.host.is_some()) {
        let first = parent.hosts.first().map_or_else(crate::hosts::own_hostname, |h| h.name.clone());
        spec.hosts = req
            .apps
            .iter()
            .map(|a| {
                let name = a.host.clone().unwrap_or_else(|| first.clone());
                let known = parent.hosts.iter().find(|h| h.name == name).cloned();
                HostEntry { slots: a.count, ..known.unwrap_or_else(|| HostEntry::new(&name, a.count)) }
            })
            .collect();
    }
    spec.program = req.apps[0].program.clone();
    spec.args = req.apps[0].args.clone();
    spec.apps = req
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut env = vec![(ENV_PARENT_PORT.to_string(), public.clone()), (ENV_APPNUM.to_string(), i.to_string())];
            if let Some(w) = &a.wdir {
                env.push((ENV_WDIR.to_string(), w.clone()));
            }
            App { program: a.program.clone(), args: a.args.clone(), count: a.count, env }
        })
        .collect();
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use wanmpi_bootstrap::SpawnApp;

    #[test]
    fn children_run_their_commands_in_order_with_the_port_and_app_number() {
        let parent = JobSpec::local("parent", &[], 4);
        let app = |p: &str, n, host: Option<&str>| SpawnApp {
            program: p.into(),
            args: vec!["-x".into()],
            count: n,
            wdir: None,
            host: host.map(Into::into),
        };
        let port = PortName { host: "10.0.0.1".into(), port: 5000, secret: [0x3c; 32] };
        let req = SpawnRequest { port: port.render(), apps: vec![app("a", 2, None), app("b", 1, Some("localhost"))] };
        let s = child_spec(&parent, &req, Arc::default());
        assert_eq!(s.parent_port_secret, Some([0x3c; 32]), "the secret goes on the pipe");
        assert_eq!(s.np, Some(3));
        assert_eq!(s.command_of(1).0, "a");
        let (prog, args, env) = s.command_of(2);
        assert_eq!((prog, args), ("b", &["-x".to_string()][..]));
        assert!(env.contains(&(ENV_PARENT_PORT.into(), port.public())) && env.contains(&(ENV_APPNUM.into(), "1".into())));
        assert!(env.iter().all(|(_, v)| !v.contains("3c3c3c3c")), "no secret in the environment: {env:?}");
        assert_eq!(s.hosts.iter().map(|h| h.slots).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(s.hosts[1].name, "localhost");
    }
}
