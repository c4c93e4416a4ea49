//! Threads that run on another core than the thread that starts them.
//!
//! A pack's work splits across threads that live for a few milliseconds each (the working
//! tree's status beside ranking, shaping on every core). Linux places a new thread on its
//! parent's core and, on a small virtual machine, wakes it there again after each wait, while
//! the other core idles: measured on a 2-core machine, the status thread and both shaping
//! threads shared the pack's core while the other sat idle for 16 ms of a 35 ms pack
//! (docs/performance.md). A thread started here keeps off its parent's core for its short
//! life, when the process may run on another: the parent, which waits for it, keeps its own.

use std::thread::{Scope, ScopedJoinHandle};

/// Starts `work` on a thread of `scope` that keeps off the calling thread's core when the
/// process may run on another.
pub(crate) fn spawn_beside<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    let parent = current();
    scope.spawn(move || {
        leave(parent);
        work()
    })
}

/// The core the calling thread runs on, where the platform tells.
fn current() -> Option<usize> {
    #[cfg(target_os = "linux")]
    return Some(rustix::thread::sched_getcpu());
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// Keeps the calling thread off `core` from now on (setting an affinity without it migrates
/// the thread at once). Nothing happens when the thread may run on `core` alone or the
/// affinity cannot be read or set: the move only saves time, and a thread left where it
/// started is still correct.
fn leave(core: Option<usize>) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_getaffinity, sched_setaffinity};
        let Some(core) = core else { return };
        let Ok(allowed) = sched_getaffinity(None) else {
            return;
        };
        if !allowed.is_set(core) || allowed.count() < 2 {
            return;
        }
        let mut elsewhere = allowed;
        elsewhere.unset(core);
        let _ = sched_setaffinity(None, &elsewhere);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = core;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_started_beside_runs_its_work_off_its_parents_core() {
        let (parent, (value, allowed)) = std::thread::scope(|scope| {
            let parent = current();
            let child = spawn_beside(scope, || {
                #[cfg(target_os = "linux")]
                let allowed = rustix::thread::sched_getaffinity(None).ok();
                #[cfg(not(target_os = "linux"))]
                let allowed: Option<()> = None;
                (42, allowed)
            });
            (parent, child.join().expect("the work does not panic"))
        });
        assert_eq!(value, 42);
        #[cfg(target_os = "linux")]
        {
            let before = rustix::thread::sched_getaffinity(None).expect("affinity reads");
            let allowed = allowed.expect("affinity reads");
            let parent = parent.expect("linux tells the core");
            if before.count() >= 2 && before.is_set(parent) {
                assert!(
                    !allowed.is_set(parent),
                    "the child may still run on core {parent}"
                );
                assert_eq!(allowed.count(), before.count() - 1);
            } else {
                assert_eq!(allowed.count(), before.count());
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (parent, allowed);
    }
}
