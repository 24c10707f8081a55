//! Any bytes: `Frame::parse` never panics, and what it accepts re-emits to
//! the same bytes; the one-host fast path's `plain_eager` accepts only
//! what `parse` reads as a plain whole eager frame, with the same fields.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_wire::{plain_eager, Frame};

fuzz_target!(|data: &[u8]| {
    let parsed = Frame::parse(data);
    if let Ok(f) = parsed {
        assert_eq!(f.to_vec(), data, "accepted frame does not re-emit identically");
    }
    if let Some((env, payload)) = plain_eager(data) {
        assert_eq!(parsed, Ok(Frame::Eager { env, flags: 0, payload }), "plain_eager accepted what parse reads otherwise");
    }
});
