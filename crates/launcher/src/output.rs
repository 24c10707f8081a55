//! Forwarding a rank's stdout and stderr, whole lines at a time so ranks'
//! lines never mix, with an optional `[rank] ` prefix.

use crate::spec::{OutputLine, OutputMode, StreamKind};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

/// A line longer than this is passed on in pieces rather than held.
const MAX_HELD: usize = 64 * 1024;

#[derive(Clone)]
pub struct Sink {
    pub mode: OutputMode,
    pub tag: bool,
    pub captured: Arc<Mutex<Vec<OutputLine>>>,
}

impl Sink {
    /// `complete` says whether `bytes` ends with the line's newline.
    fn emit(&self, rank: u32, stream: StreamKind, bytes: &[u8], complete: bool) {
        match self.mode {
            OutputMode::Capture => {
                let text = String::from_utf8_lossy(bytes.strip_suffix(b"\n").unwrap_or(bytes)).into_owned();
                self.captured.lock().unwrap_or_else(|p| p.into_inner()).push(OutputLine { rank, stream, text });
            }
            OutputMode::Forward => {
                let mut line = Vec::with_capacity(bytes.len() + 8);
                if self.tag {
                    line.extend_from_slice(format!("[{rank}] ").as_bytes());
                }
                line.extend_from_slice(bytes);
                // A tagged partial line still ends the line: the next tag
                // must start a line of its own.
                if self.tag && !complete {
                    line.push(b'\n');
                }
                // Errors (closed stdout) are ignored: the rank's pipe must
                // still be drained so the rank never blocks on it.
                let _ = match stream {
                    StreamKind::Stdout => {
                        let mut o = std::io::stdout().lock();
                        o.write_all(&line).and_then(|_| o.flush())
                    }
                    StreamKind::Stderr => std::io::stderr().lock().write_all(&line),
                };
            }
        }
    }

    /// Reads `from` until end of stream, passing on each line.
    pub fn pump(&self, rank: u32, stream: StreamKind, mut from: impl Read) {
        let mut held: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            held.extend_from_slice(&buf[..n]);
            let mut start = 0;
            while let Some(i) = held[start..].iter().position(|&b| b == b'\n') {
                self.emit(rank, stream, &held[start..start + i + 1], true);
                start += i + 1;
            }
            held.drain(..start);
            if held.len() > MAX_HELD {
                self.emit(rank, stream, &held, false);
                held.clear();
            }
        }
        if !held.is_empty() {
            self.emit(rank, stream, &held, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lines_and_keeps_a_partial_last_line() {
        let sink = Sink { mode: OutputMode::Capture, tag: false, captured: Arc::default() };
        sink.pump(2, StreamKind::Stderr, &b"one\ntwo\n\nlast"[..]);
        let got: Vec<String> = sink.captured.lock().unwrap().iter().map(|l| l.text.clone()).collect();
        assert_eq!(got, ["one", "two", "", "last"]);
        assert!(sink.captured.lock().unwrap().iter().all(|l| l.rank == 2 && l.stream == StreamKind::Stderr));
    }
}
