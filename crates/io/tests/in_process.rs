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
        f.set_view(4 * me as i64, int(), ft, "native", &Info::default()).unwrap();
        let mine: Vec<i32> = (0..4).map(|i| 100 * me + i).collect();
        // SAFETY: 4 ints.
        unsafe { f.write_all(At::Individual, mine.as_ptr() as *const u8, 4, &int()).unwrap() };
        assert_eq!(f.position(), 4);
        f.set_view(0, int(), int(), "native", &Info::default()).unwrap();
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
