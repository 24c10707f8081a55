//! Any bytes: `Frame::parse` never panics, and what it accepts re-emits to
//! the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_wire::Frame;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = Frame::parse(data) {
        assert_eq!(f.to_vec(), data, "accepted frame does not re-emit identically");
    }
});
