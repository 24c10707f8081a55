//! The forwarder's side of the control socket (see `crate::control`).
//! Requests are rare and tiny, so a connection is served to completion with
//! short blocking timeouts; forwarding pauses for at most those bounds.

use super::Forwarder;
use crate::topology::LinkSel;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

pub(super) fn accept_all(fw: &mut Forwarder, listener: &UnixListener) {
    while let Ok((stream, _)) = listener.accept() {
        if let Err(e) = serve(fw, stream) {
            eprintln!("wanmpi-emu forwarder: control connection: {e}");
        }
    }
}

fn serve(fw: &mut Forwarder, stream: UnixStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.set_write_timeout(Some(Duration::from_millis(1000)))?;
    let mut line = String::new();
    BufReader::new((&stream).take_limited()).read_line(&mut line)?;
    let answer = match handle(fw, line.trim()) {
        Ok(body) => format!("ok\n{body}"),
        Err(msg) => format!("err {msg}\n"),
    };
    (&stream).write_all(answer.as_bytes())
}

fn handle(fw: &mut Forwarder, req: &str) -> Result<String, String> {
    let words: Vec<&str> = req.split_whitespace().collect();
    match words.as_slice() {
        ["ping"] => Ok(String::new()),
        ["status"] => Ok(fw.counters().to_text()),
        ["dump"] => {
            fw.write_counters_file();
            Ok(String::new())
        }
        ["link", a, b, dir, rest @ ..] => {
            let host = |w: &str| -> Result<usize, String> {
                let h: usize = w.parse().map_err(|_| format!("`{w}`: expected a host index"))?;
                (h < fw.topology().hosts).then_some(h).ok_or_else(|| format!("no host {h}"))
            };
            let up = match *dir {
                "up" => true,
                "down" => false,
                d => return Err(format!("`{d}`: expected up or down")),
            };
            let path = match rest {
                [] => None,
                [p] => Some(p.parse::<u8>().map_err(|_| format!("`{p}`: expected a path number"))?),
                _ => return Err("too many words".into()),
            };
            let sel = LinkSel { a: Some(host(a)?), b: Some(host(b)?), both: true, path };
            match fw.set_links(&sel, up) {
                0 => Err("no link matched".into()),
                n => Ok(format!("{n} one-way links {}\n", if up { "up" } else { "down" })),
            }
        }
        _ => Err(format!("unknown request `{req}`")),
    }
}

/// Cap what one request may read.
trait TakeLimited: std::io::Read + Sized {
    fn take_limited(self) -> std::io::Take<Self> {
        self.take(4096)
    }
}
impl<R: std::io::Read> TakeLimited for R {}
