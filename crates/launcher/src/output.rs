//! Forwarding a rank's stdout and stderr, whole lines at a time so ranks'
//! lines never mix, with an optional `[rank] ` prefix; and keeping count of
//! what could not be written (`Lost`), so that mpirun can say so and fail
//! rather than exit 0 with the job's output gone (`mpirun ... > /dev/full`).

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
    pub lost: Arc<Lost>,
}

/// Output mpirun could not write: a full disk, a closed pipe, a full
/// device. The ranks' pipes are still drained so no rank ever blocks.
#[derive(Debug, Default)]
pub struct Lost {
    inner: Mutex<LostState>,
}

#[derive(Debug, Default)]
struct LostState {
    /// The first failure: which stream, and the error.
    first: Option<(StreamKind, String)>,
    announced: bool,
    lines: u64,
}

fn stream_name(s: StreamKind) -> &'static str {
    match s {
        StreamKind::Stdout => "stdout",
        StreamKind::Stderr => "stderr",
    }
}

impl Lost {
    fn lock(&self) -> std::sync::MutexGuard<'_, LostState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, stream: StreamKind, e: &std::io::Error) {
        let mut g = self.lock();
        g.first.get_or_insert_with(|| (stream, e.to_string()));
        g.lines += 1;
    }

    /// The first failure, once: for saying so while the job runs.
    pub fn news(&self) -> Option<String> {
        let mut g = self.lock();
        if g.announced {
            return None;
        }
        let (s, e) = g.first.clone()?;
        g.announced = true;
        Some(format!("cannot write the ranks' output to {} ({e}); it is being lost", stream_name(s)))
    }

    /// What was lost in all, if anything: for the end of the job.
    pub fn summary(&self) -> Option<String> {
        let g = self.lock();
        let (s, e) = g.first.clone()?;
        let n = g.lines;
        Some(format!("{n} line{} of the ranks' output could not be written (the first to {}: {e})", if n == 1 { "" } else { "s" }, stream_name(s)))
    }
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
                // A failure is counted, not fatal here: the rank's pipe must
                // still be drained so the rank never blocks on it.
                let written = match stream {
                    StreamKind::Stdout => {
                        let mut o = std::io::stdout().lock();
                        o.write_all(&line).and_then(|_| o.flush())
                    }
                    StreamKind::Stderr => std::io::stderr().lock().write_all(&line),
                };
                if let Err(e) = written {
                    self.lost.record(stream, &e);
                }
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
        let sink = Sink { mode: OutputMode::Capture, tag: false, captured: Arc::default(), lost: Arc::default() };
        sink.pump(2, StreamKind::Stderr, &b"one\ntwo\n\nlast"[..]);
        let got: Vec<String> = sink.captured.lock().unwrap().iter().map(|l| l.text.clone()).collect();
        assert_eq!(got, ["one", "two", "", "last"]);
        assert!(sink.captured.lock().unwrap().iter().all(|l| l.rank == 2 && l.stream == StreamKind::Stderr));
        assert_eq!(sink.lost.summary(), None);
    }

    #[test]
    fn lost_output_is_announced_once_and_counted() {
        let lost = Lost::default();
        assert_eq!(lost.news(), None);
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        lost.record(StreamKind::Stdout, &full);
        lost.record(StreamKind::Stderr, &std::io::Error::from_raw_os_error(libc::EPIPE));
        let news = lost.news().unwrap();
        assert!(news.contains("stdout") && news.contains("No space left"), "{news}");
        assert_eq!(lost.news(), None);
        let sum = lost.summary().unwrap();
        assert!(sum.starts_with("2 lines of the ranks' output could not be written"), "{sum}");
    }
}
