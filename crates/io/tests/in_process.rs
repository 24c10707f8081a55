//! MPI-IO in one process: a runtime per thread over loopback transports
//! (as the runtime's own in-process tests), all opening one file in a
//! temporary directory.

use std::sync::Arc;
use std::thread;

use wanmpi_engine::ErrorClass;
use wanmpi_io::{amode, At, File, SplitKind};
use wanmpi_runtime::{BasicType, Datatype, Info, Runtime, RuntimeOptions, COMM_WORLD};
use wanmpi_transport::loopback_world;

fn world<T: Send>(n: u32, f: impl Fn(&Arc<Runtime>) -> T + Sync) -> Vec<T> {
    let f = &f;
    thread::scope(|s| {
        let hs: Vec<_> = loopback_world(n, 4)
            .into_iter()
            .map(|t| {
                s.spawn(move || {
                    let rt = Runtime::over(Box::new(t), RuntimeOptions::default()).expect("runtime");
                    let out = f(&rt);
                    rt.barrier(COMM_WORLD).expect("closing barrier");
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank thread")).collect()
    })
}

fn int() -> Datatype {
    Datatype::basic(BasicType::Int)
}

#[test]
fn interleaved_view_ordered_and_shared_writes() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("data").to_string_lossy().into_owned();
    let n = 3;
    world(n, |rt| {
        let me = rt.comm_rank(COMM_WORLD).unwrap() as i32;
        let f = File::open(rt, COMM_WORLD, &name, amode::RDWR | amode::CREATE, Info::default()).unwrap();
        // Each rank owns ints me, me+n, me+2n, ... through a resized view.
        let ft = Datatype::resized(&int(), 0, 4 * n as isize).unwrap();
        ft.commit();
        f.set_view(4 * me as i64, int(), ft, "native", None, &Info::default()).unwrap();
        let mine: Vec<i32> = (0..4).map(|i| 100 * me + i).collect();
        // SAFETY: 4 ints.
        unsafe { f.write_all(At::Individual, mine.as_ptr() as *const u8, 4, &int()).unwrap() };
        assert_eq!(f.position(), 4);
        f.set_view(0, int(), int(), "native", None, &Info::default()).unwrap();
        let mut all = vec![0i32; 4 * n as usize];
        // SAFETY: room for 4n ints.
        let st = unsafe { f.read_at(&mut all, 0) };
        assert_eq!(st, 16 * n as usize);
        for (k, v) in all.iter().enumerate() {
            let (i, r) = (k / n as usize, k % n as usize);
            assert_eq!(*v, 100 * r as i32 + i as i32);
        }
        // Ordered: rank r writes r+1 ints after the lower ranks' ones.
        f.seek_shared(0, wanmpi_io::SEEK_END).unwrap();
        let start = f.position_shared().unwrap();
        let block = vec![me; me as usize + 1];
        // SAFETY: me+1 ints.
        unsafe { f.write_ordered(block.as_ptr() as *const u8, block.len(), &int()).unwrap() };
        let total = (n * (n + 1) / 2) as i64;
        assert_eq!(f.position_shared().unwrap(), start + total);
        let mut back = vec![-1i32; total as usize];
        // SAFETY: room for `total` ints.
        unsafe { f.read(At::Offset(start), back.as_mut_ptr() as *mut u8, back.len(), &int()).unwrap() };
        let want: Vec<i32> = (0..n as i32).flat_map(|r| vec![r; r as usize + 1]).collect();
        assert_eq!(back, want);
        f.close().unwrap();
    });
}

#[test]
fn errors_agree_across_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("missing").to_string_lossy().into_owned();
    world(2, |rt| {
        let e = File::open(rt, COMM_WORLD, &name, amode::RDONLY, Info::default()).err().unwrap();
        assert_eq!(e.class, ErrorClass::NoSuchFile);
        let f = File::open(rt, COMM_WORLD, &name, amode::WRONLY | amode::CREATE | amode::EXCL, Info::default()).unwrap();
        f.close().unwrap();
        let e = File::open(rt, COMM_WORLD, &name, amode::WRONLY | amode::CREATE | amode::EXCL, Info::default()).err().unwrap();
        assert_eq!(e.class, ErrorClass::FileExists);
        let f = File::open(rt, COMM_WORLD, &name, amode::RDONLY | amode::DELETE_ON_CLOSE, Info::default()).unwrap();
        let v = [1i32];
        // SAFETY: one int.
        let e = unsafe { f.write(At::Offset(0), v.as_ptr() as *const u8, 1, &int()) }.err().unwrap();
        assert_eq!(e.class, ErrorClass::ReadOnly);
        f.close().unwrap();
        assert!(!std::path::Path::new(&name).exists());
    });
}

trait ReadInts {
    unsafe fn read_at(&self, out: &mut [i32], at: i64) -> usize;
}
impl ReadInts for File {
    unsafe fn read_at(&self, out: &mut [i32], at: i64) -> usize {
        self.read(At::Offset(at), out.as_mut_ptr() as *mut u8, out.len(), &int()).unwrap().bytes
    }
}

#[test]
fn split_collectives_atomic_mode_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("split").to_string_lossy().into_owned();
    world(2, |rt| {
        let me = rt.comm_rank(COMM_WORLD).unwrap() as i64;
        let f = File::open(rt, COMM_WORLD, &name, amode::RDWR | amode::CREATE, Info::default()).unwrap();
        f.set_atomicity(true).unwrap();
        assert!(f.atomicity());
        let v = [me as i32 + 10; 4];
        // SAFETY: 4 ints.
        f.split_begin(SplitKind::WriteAtAll, || unsafe { f.write_all(At::Offset(16 * me), v.as_ptr() as *const u8, 4, &int()) }).unwrap();
        // A second begin before the end is refused; the wrong end too.
        assert_eq!(f.split_begin(SplitKind::ReadAll, || unreachable!()).unwrap_err().class, ErrorClass::Io);
        assert_eq!(f.split_end(SplitKind::ReadAll).unwrap_err().class, ErrorClass::Io);
        assert_eq!(f.split_end(SplitKind::WriteAtAll).unwrap().bytes, 16);
        assert_eq!(f.size().unwrap(), 32);
        f.seek(-1, wanmpi_io::SEEK_END).unwrap();
        assert_eq!(f.position(), 31);
        f.preallocate(100).unwrap();
        assert_eq!(f.size().unwrap(), 100);
        f.set_size(20).unwrap();
        assert_eq!(f.size().unwrap(), 20);
        let mut back = [0i32; 8];
        // SAFETY: room for 8 ints; the file holds 5.
        let st = unsafe { f.read(At::Offset(0), back.as_mut_ptr() as *mut u8, 8, &int()).unwrap() };
        assert_eq!((st.bytes, back[0], back[4]), (20, 10, 11));
        f.close().unwrap();
    });
}

/// A representation in which an int is 8 big-endian bytes, for memory
/// types made of ints only (the tests' own).
struct Be64 {
    fail_writes: bool,
}

impl wanmpi_io::Datarep for Be64 {
    fn name(&self) -> &str {
        "be64"
    }
    fn file_extent(&self, b: BasicType) -> wanmpi_engine::MpiResult<usize> {
        match b {
            BasicType::Int => Ok(8),
            _ => Err(wanmpi_engine::MpiError::new(ErrorClass::Conversion, "be64 has ints only")),
        }
    }
    fn converts_reads(&self) -> bool {
        true
    }
    fn converts_writes(&self) -> bool {
        true
    }
    unsafe fn read(&self, userbuf: *mut u8, _: &Datatype, count: usize, filebuf: &[u8], position: u64) -> wanmpi_engine::MpiResult<()> {
        assert_eq!(filebuf.len(), 8 * count);
        let out = (userbuf as *mut i32).add(position as usize);
        for (i, b) in filebuf.chunks(8).enumerate() {
            *out.add(i) = i64::from_be_bytes(b.try_into().unwrap()) as i32;
        }
        Ok(())
    }
    unsafe fn write(&self, userbuf: *const u8, _: &Datatype, count: usize, filebuf: &mut [u8], position: u64) -> wanmpi_engine::MpiResult<()> {
        if self.fail_writes {
            return Err(wanmpi_engine::MpiError::new(ErrorClass::Conversion, "refused"));
        }
        let from = (userbuf as *const i32).add(position as usize);
        for i in 0..count {
            filebuf[8 * i..8 * i + 8].copy_from_slice(&i64::from(*from.add(i)).to_be_bytes());
        }
        Ok(())
    }
}

#[test]
fn registered_representation_converts_and_sizes_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("be64").to_string_lossy().into_owned();
    world(2, |rt| {
        let me = rt.comm_rank(COMM_WORLD).unwrap() as i32;
        let f = File::open(rt, COMM_WORLD, &name, amode::RDWR | amode::CREATE, Info::default()).unwrap();
        let be64: Arc<dyn wanmpi_io::Datarep> = Arc::new(Be64 { fail_writes: false });
        // Interleaved by rank; byte displacements and extents are file
        // bytes, as given (two 8-byte ints per tile).
        let ft = Datatype::resized(&int(), 0, 16).unwrap();
        ft.commit();
        f.set_view(8 * me as i64, int(), ft.clone(), "be64", Some(be64.clone()), &Info::default()).unwrap();
        assert_eq!(f.type_extent(&int()).unwrap(), 8);
        let mine: Vec<i32> = (0..3).map(|i| -(100 * me + i)).collect();
        // SAFETY: 3 ints.
        unsafe { f.write_all(At::Individual, mine.as_ptr() as *const u8, 3, &int()).unwrap() };
        assert_eq!(f.position(), 3);
        // The raw file: rank r's int i at byte 16 i + 8 r, big-endian, 8 bytes.
        f.set_view(0, Datatype::basic(BasicType::Byte), Datatype::basic(BasicType::Byte), "native", None, &Info::default()).unwrap();
        let mut raw = vec![0u8; 64];
        // SAFETY: room for 64 bytes.
        let got = unsafe { f.read(At::Offset(0), raw.as_mut_ptr(), 64, &Datatype::basic(BasicType::Byte)).unwrap() };
        assert_eq!(got.bytes, 48);
        for k in 0..6 {
            let (i, r) = (k / 2, k % 2);
            assert_eq!(raw[8 * k..8 * k + 8], (-(100 * r as i64 + i as i64)).to_be_bytes(), "file int {k}");
        }
        // Back through the view; a read past the end stops at the last int.
        f.set_view(8 * me as i64, int(), ft, "be64", Some(be64), &Info::default()).unwrap();
        let mut back = vec![7i32; 4];
        // SAFETY: room for 4 ints.
        let st = unsafe { f.read(At::Individual, back.as_mut_ptr() as *mut u8, 4, &int()).unwrap() };
        assert_eq!(st.bytes, 12);
        assert_eq!(back[..3], mine[..]);
        assert_eq!(back[3], 7);
        assert_eq!(f.position(), 3);
        // A conversion that fails fails the write with its class.
        f.set_view(0, int(), int(), "be64", Some(Arc::new(Be64 { fail_writes: true })), &Info::default()).unwrap();
        // SAFETY: 3 ints.
        let e = unsafe { f.write(At::Offset(0), mine.as_ptr() as *const u8, 3, &int()) }.unwrap_err();
        assert_eq!(e.class, ErrorClass::Conversion);
        // Memory types of other elements have no size in be64.
        let d = [0f64; 1];
        // SAFETY: one double.
        let e = unsafe { f.write(At::Offset(0), d.as_ptr() as *const u8, 1, &Datatype::basic(BasicType::Double)) }.unwrap_err();
        assert_eq!(e.class, ErrorClass::Conversion);
        f.close().unwrap();
    });
}
