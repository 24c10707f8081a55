//! Synchronisation (MPI-4.0 §12.5): fence, post-start-complete-wait,
//! lock/unlock, lock_all, flush. Every one of them ends by waiting until
//! the operations it closes are answered by their targets (so they are
//! complete there, not only locally); the waits run the progress loop, so
//! this process serves its own window meanwhile.

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::create::{bad_win, Flavor};
use super::origin::{Held, Sink};
use super::wire::Request;
use super::{LockType, WinId, Window, MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOSUCCEED};
use crate::group::Group;
use crate::runtime::{Runtime, State};

fn win_mut(st: &mut State, w: WinId) -> MpiResult<&mut Window> {
    st.wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))
}

fn sync_err(msg: impl Into<String>) -> MpiError {
    MpiError::new(ErrorClass::RmaSync, msg)
}

impl Runtime {
    /// The world rank of window rank `r`.
    fn target_world(&self, w: WinId, r: i32) -> MpiResult<u32> {
        let st = self.lock();
        let win = st.wins.get(w).ok_or_else(|| bad_win(w))?;
        usize::try_from(r)
            .ok()
            .and_then(|r| win.group.world(r))
            .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("rank {r} is not in the window's group of {}", win.group.size())))
    }

    /// Waits until no operation to `target` (every target: None) is
    /// unanswered, then reports the first error a target sent back.
    fn drain(&self, w: WinId, target: Option<u32>) -> MpiResult<()> {
        self.wait_until(|st| {
            let win = win_mut(st, w)?;
            Ok((win.access.unanswered(target) == 0).then_some(()))
        })?;
        win_mut(&mut self.lock(), w)?.access.take_error()
    }

    /// MPI_Win_fence.
    pub fn win_fence(&self, w: WinId, assert: i32) -> MpiResult<()> {
        let comm = {
            let mut st = self.lock();
            let win = win_mut(&mut st, w)?;
            if win.access.started.is_some() || win.access.posted.is_some() || !win.access.locks.is_empty() || win.access.lock_all {
                return Err(sync_err("MPI_Win_fence inside a PSCW or lock epoch"));
            }
            win.comm
        };
        self.drain(w, None)?;
        // Nothing to wait for when nobody accessed the window before
        // (NOPRECEDE) — but a fence still separates the program's local
        // stores from the next epoch's accesses, so everyone meets.
        let _ = assert & MODE_NOPRECEDE;
        self.barrier(comm)?;
        let mut st = self.lock();
        win_mut(&mut st, w)?.access.fence_epoch = assert & MODE_NOSUCCEED == 0;
        Ok(())
    }

    /// MPI_Win_lock. The lock request goes ahead of the operations without
    /// a round trip; only a lock on this process's own memory (or on a
    /// shared-memory window, whose memory the program touches directly)
    /// waits for the grant.
    pub fn win_lock(&self, w: WinId, lock: LockType, rank: i32, assert: i32) -> MpiResult<()> {
        let t = self.target_world(w, rank)?;
        let wait = {
            let mut st = self.lock();
            let me = st.engine.rank();
            let State { wins, engine, .. } = &mut *st;
            let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
            if win.access.locks.contains_key(&t) || win.access.lock_all {
                return Err(sync_err(format!("rank {rank} of this window is already locked by this process")));
            }
            // A fence epoch may be open (the last fence lacked NOSUCCEED,
            // as most programs' do): MPI lets passive target follow it.
            if win.access.started.is_some() {
                return Err(sync_err("MPI_Win_lock inside a PSCW access epoch"));
            }
            let nocheck = assert & MODE_NOCHECK != 0;
            win.access.locks.insert(t, Held { granted: nocheck, nocheck });
            if !nocheck {
                let id = win.access.issue(t, Sink::Grant, None);
                win.send_request(engine, t, &Request::Lock { id, exclusive: lock == LockType::Exclusive });
            }
            !nocheck && (t == me || win.flavor == Flavor::Shared)
        };
        if wait {
            self.wait_until(|st| Ok(win_mut(st, w)?.access.locks.get(&t).is_some_and(|h| h.granted).then_some(())))?;
        }
        Ok(())
    }

    /// MPI_Win_unlock: the operations complete at the target, then the lock goes.
    pub fn win_unlock(&self, w: WinId, rank: i32) -> MpiResult<()> {
        let t = self.target_world(w, rank)?;
        {
            let mut st = self.lock();
            let State { wins, engine, .. } = &mut *st;
            let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
            let held =
                win.access.locks.get(&t).copied().ok_or_else(|| sync_err(format!("rank {rank} of this window is not locked by this process")))?;
            if !held.nocheck {
                let id = win.access.issue(t, Sink::Ack, None);
                win.send_request(engine, t, &Request::Unlock { id });
            }
        }
        let r = self.drain(w, Some(t));
        win_mut(&mut self.lock(), w)?.access.locks.remove(&t);
        r
    }

    /// MPI_Win_lock_all: a shared lock on every rank.
    pub fn win_lock_all(&self, w: WinId, assert: i32) -> MpiResult<()> {
        let n = self.lock().wins.get(w).ok_or_else(|| bad_win(w))?.group.size();
        for r in 0..n {
            self.win_lock(w, LockType::Shared, r as i32, assert)?;
        }
        let mut st = self.lock();
        let win = win_mut(&mut st, w)?;
        win.access.lock_all = true;
        Ok(())
    }

    /// MPI_Win_unlock_all.
    pub fn win_unlock_all(&self, w: WinId) -> MpiResult<()> {
        let n = {
            let mut st = self.lock();
            let win = win_mut(&mut st, w)?;
            if !win.access.lock_all {
                return Err(sync_err("MPI_Win_unlock_all without MPI_Win_lock_all"));
            }
            win.access.lock_all = false;
            win.group.size()
        };
        let mut first = Ok(());
        for r in 0..n {
            let e = self.win_unlock(w, r as i32);
            if first.is_ok() {
                first = e;
            }
        }
        first
    }

    /// MPI_Win_flush (rank) or MPI_Win_flush_all (None): every operation
    /// to the target(s) is complete there.
    pub fn win_flush(&self, w: WinId, rank: Option<i32>) -> MpiResult<()> {
        self.flush(w, rank, false)
    }

    /// MPI_Win_flush_local(_all): the origin's buffers may be reused. Data
    /// to send was packed at the call, so only operations that bring data
    /// back (get, get_accumulate, ...) are waited for.
    pub fn win_flush_local(&self, w: WinId, rank: Option<i32>) -> MpiResult<()> {
        self.flush(w, rank, true)
    }

    fn flush(&self, w: WinId, rank: Option<i32>, local: bool) -> MpiResult<()> {
        let t = rank.map(|r| self.target_world(w, r)).transpose()?;
        {
            let mut st = self.lock();
            let win = win_mut(&mut st, w)?;
            let locked = match t {
                Some(t) => win.access.locks.contains_key(&t) || win.access.lock_all,
                None => !win.access.locks.is_empty() || win.access.lock_all,
            };
            if !locked {
                return Err(sync_err("MPI_Win_flush outside a passive-target epoch"));
            }
        }
        if local {
            self.wait_until(|st| Ok((!win_mut(st, w)?.access.brings_back(t)).then_some(())))?;
            return win_mut(&mut self.lock(), w)?.access.take_error();
        }
        self.drain(w, t)
    }

    /// MPI_Win_sync: window memory and the program's view of it agree.
    pub fn win_sync(&self, w: WinId) -> MpiResult<()> {
        self.lock().wins.get(w).ok_or_else(|| bad_win(w))?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// MPI_Win_post: exposes the window to `group`'s ranks.
    pub fn win_post(&self, w: WinId, group: &Group, _assert: i32) -> MpiResult<()> {
        let mut st = self.lock();
        let State { wins, engine, .. } = &mut *st;
        let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
        if win.access.posted.is_some() {
            return Err(sync_err("MPI_Win_post twice without MPI_Win_wait"));
        }
        let members = group.members().to_vec();
        for &m in &members {
            win.send_request(engine, m, &Request::Post);
        }
        win.access.posted = Some(members);
        self.progress(&mut st)
    }

    /// MPI_Win_start: waits until every rank of `group` posted.
    pub fn win_start(&self, w: WinId, group: &Group, assert: i32) -> MpiResult<()> {
        let members = group.members().to_vec();
        {
            let mut st = self.lock();
            let win = win_mut(&mut st, w)?;
            if win.access.started.is_some() {
                return Err(sync_err("MPI_Win_start twice without MPI_Win_complete"));
            }
        }
        if assert & MODE_NOCHECK == 0 {
            self.wait_until(|st| {
                let win = win_mut(st, w)?;
                Ok(members.iter().all(|m| win.exposure.posts.get(m).is_some_and(|&n| n > 0)).then_some(()))
            })?;
            let mut st = self.lock();
            let win = win_mut(&mut st, w)?;
            for m in &members {
                if let Some(n) = win.exposure.posts.get_mut(m) {
                    *n -= 1;
                }
            }
        }
        win_mut(&mut self.lock(), w)?.access.started = Some(members);
        Ok(())
    }

    /// MPI_Win_complete: the operations are done at their targets, then
    /// each target hears that this origin finished.
    pub fn win_complete(&self, w: WinId) -> MpiResult<()> {
        let members = win_mut(&mut self.lock(), w)?.access.started.clone().ok_or_else(|| sync_err("MPI_Win_complete without MPI_Win_start"))?;
        let r = self.drain(w, None);
        let mut st = self.lock();
        let State { wins, engine, .. } = &mut *st;
        let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
        for &m in &members {
            win.send_request(engine, m, &Request::Complete);
        }
        win.access.started = None;
        self.progress(&mut st)?;
        r
    }

    /// MPI_Win_wait (or MPI_Win_test with `block` false): the exposure
    /// epoch ends once every origin of the post group completed.
    pub fn win_wait(&self, w: WinId, block: bool) -> MpiResult<bool> {
        let members = win_mut(&mut self.lock(), w)?.access.posted.clone().ok_or_else(|| sync_err("MPI_Win_wait without MPI_Win_post"))?;
        let all_done = |st: &mut State| -> MpiResult<Option<()>> {
            let win = win_mut(st, w)?;
            Ok(members.iter().all(|m| win.exposure.completes.get(m).is_some_and(|&n| n > 0)).then_some(()))
        };
        if block {
            self.wait_until(all_done)?;
        } else {
            let mut st = self.lock();
            self.progress(&mut st)?;
            if all_done(&mut st)?.is_none() {
                return Ok(false);
            }
        }
        let mut st = self.lock();
        let win = win_mut(&mut st, w)?;
        for m in &members {
            if let Some(n) = win.exposure.completes.get_mut(m) {
                *n -= 1;
            }
        }
        win.access.posted = None;
        Ok(true)
    }
}
