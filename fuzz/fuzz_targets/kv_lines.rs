//! The key/value service's lines (crates/bootstrap, `proto.rs`,
//! `sealed_lines.rs`): any bytes read as plain lines and parsed as
//! requests never panic, and a request that parses renders to a line
//! that parses to the same rendering (the same for the lines the service
//! pushes, `push.rs`); any bytes as sealed records never
//! panic and never open; the input's lines sealed open back to themselves.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_bootstrap::proto::{read_line, Request};
use wanmpi_bootstrap::sealed_lines::{self, LineKeys};
use wanmpi_bootstrap::Push;

const SECRET: [u8; 32] = [0x31; 32];

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    let mut lines = vec![];
    for _ in 0..64 {
        match read_line(&mut r) {
            Ok(Some(line)) => {
                if let Ok(req) = Request::parse(&line) {
                    let once = req.render();
                    let again = Request::parse(&once).unwrap_or_else(|e| panic!("{req:?} rendered as {once:?}, which does not parse: {e}"));
                    assert_eq!(again.render(), once, "rendering of {req:?} is not stable");
                }
                if let Some(p) = Push::parse(&line) {
                    let once = p.render();
                    let again = Push::parse(&once).unwrap_or_else(|| panic!("{p:?} rendered as {once:?}, which does not parse"));
                    assert_eq!(again.render(), once, "rendering of {p:?} is not stable");
                }
                lines.push(line);
            }
            _ => break,
        }
    }

    // Sealed: the lines read above go through and come back.
    let mut client = LineKeys::derive(&SECRET, "server-nonce", "client-nonce", 3, true);
    let mut server = LineKeys::derive(&SECRET, "server-nonce", "client-nonce", 3, false);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut wire = vec![];
    sealed_lines::write_lines(&mut wire, Some(&mut client), &refs).expect("to a Vec");
    let mut w = &wire[..];
    for l in &lines {
        assert_eq!(sealed_lines::read_line(&mut w, Some(&mut server)).expect("opens").as_deref(), Some(l.as_str()));
    }

    // Hostile: the input as sealed records.
    // Keys that never seal anything here (records sealed above, which the
    // fuzzer sees through comparisons, would open under the others).
    let mut fresh = LineKeys::derive(&SECRET, "other-server-nonce", "other-client-nonce", 3, false);
    let mut r = data;
    if let Ok(Some(l)) = sealed_lines::read_line(&mut r, Some(&mut fresh)) {
        panic!("a record made without the key opened: {l:?}");
    }
});
