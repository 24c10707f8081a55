//! The control channel: a Unix stream socket `ctl.sock` in the state
//! directory. One request line per connection, answered with `ok` or
//! `err MESSAGE` on the first line and a body after it.
//!
//! Requests: `status` (body: counters text), `link A B up|down [PATH]`
//! (both directions), `dump` (write `counters.txt` now), `ping`.

use crate::error::{EmuError, Result};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

pub const SOCKET: &str = "ctl.sock";

/// Send `request` to the forwarder of the emulation in `state_dir` and return
/// the body of a successful answer.
pub fn request(state_dir: &Path, request: &str) -> Result<String> {
    let path = state_dir.join(SOCKET);
    let ctx = |what: &str| format!("{what} {}", path.display());
    let mut s = UnixStream::connect(&path).map_err(|e| EmuError::Forwarder(format!("{}: {e} (is the forwarder running?)", ctx("connecting to"))))?;
    let limit = Some(Duration::from_secs(5));
    s.set_read_timeout(limit).map_err(|e| EmuError::io(ctx("socket"), e))?;
    s.set_write_timeout(limit).map_err(|e| EmuError::io(ctx("socket"), e))?;
    s.write_all(format!("{request}\n").as_bytes()).map_err(|e| EmuError::io(ctx("writing to"), e))?;
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| EmuError::io(ctx("reading from"), e))?;
    let (head, body) = answer.split_once('\n').unwrap_or((answer.as_str(), ""));
    match head {
        "ok" => Ok(body.to_string()),
        h => Err(EmuError::Forwarder(h.strip_prefix("err ").unwrap_or(h).to_string())),
    }
}
