//! Threads that run on another core than the thread that starts them.
//!
//! A pack's work splits across threads that live for a few milliseconds each (the working
//! tree's status beside ranking, shaping on every core). On a 2-core virtual machine Linux was
//! seen to start such threads on the pack's core and wake them there again after each wait:
//! the status thread and both shaping threads shared the pack's core while the other sat idle
//! for 16 ms of a 35 ms pack (docs/performance.md). A thread started here keeps off its
//! parent's core for its short life, when the process may run on another: the parent, which
//! waits for it, keeps its own.

use std::thread::{Scope, ScopedJoinHandle};

/// Starts `work` on a thread of `scope` that keeps off the calling thread's core when the
/// process may run on another. Linux queues a new thread on its parent's core, where it would
/// not run before the parent next waits (3 ms into shaping, when measured), so the parent
/// yields its core once: the thread runs, moves, and the parent goes on where it was.
pub(crate) fn spawn_beside<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    let parent = current();
    let handle = scope.spawn(move || {
        leave(parent);
        work()
    });
    std::thread::yield_now();
    handle
}

/// Starts `work` on a detached thread that keeps off the calling thread's core, as
/// [`spawn_beside`] does, for work nothing waits on but what it leaves behind (a compiled
/// rule set). A thread that cannot be started leaves the work undone.
pub(crate) fn detach_beside(work: impl FnOnce() + Send + 'static) {
    let parent = current();
    let started = std::thread::Builder::new().spawn(move || {
        leave(parent);
        work()
    });
    if started.is_ok() {
        std::thread::yield_now();
    }
}

/// Has the calling thread give way to the others of the process when they want its core: work
/// that is wanted only at the end (the working tree's status) lets the threads a pack waits on
/// (shaping's second thread) run first. On Linux a thread's nice value is its own; elsewhere,
/// or when it cannot be changed, nothing happens, and the work only runs sooner.
pub(crate) fn give_way() {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::nice(GIVE_WAY_NICE);
}

/// How much lower [`give_way`] sets a thread's priority: at nice 10 a thread gets about a tenth
/// of a core that a thread of nice 0 also wants.
#[cfg(target_os = "linux")]
const GIVE_WAY_NICE: i32 = 10;

/// How many threads the process may run at once, asked once: the standard library reads the
/// process's cgroup files each time it is asked.
pub(crate) fn available() -> usize {
    static AVAILABLE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `beside()` on a thread beside this one and `here()` on this one, when the process may run
/// two threads at once; one after the other when it may not.
pub(crate) fn join<A: Send, B>(
    beside: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (A, B) {
    if available() < 2 {
        return (beside(), here());
    }
    std::thread::scope(|scope| {
        let a = spawn_beside(scope, beside);
        let b = here();
        let a = a
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (a, b)
    })
}

/// `f` of each of `items`, in their order, the later half of them on a thread beside this
/// one when there are at least `min` items and the process may run two threads at once.
pub(crate) fn map<I: Sync, O: Send>(items: &[I], min: usize, f: impl Fn(&I) -> O + Sync) -> Vec<O> {
    if items.len() < min.max(2) {
        return items.iter().map(&f).collect();
    }
    let (first, later) = items.split_at(items.len() / 2);
    let (later, mut out) = join(
        || later.iter().map(&f).collect::<Vec<O>>(),
        || first.iter().map(&f).collect::<Vec<O>>(),
    );
    out.extend(later);
    out
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
    fn a_thread_started_beside_runs_its_work() {
        let value = std::thread::scope(|scope| {
            spawn_beside(scope, || 42)
                .join()
                .expect("the work does not panic")
        });
        assert_eq!(value, 42);
    }

    #[test]
    fn work_split_over_two_threads_gives_what_one_thread_gives() {
        let items: Vec<u64> = (0..101).collect();
        let square = |n: &u64| n * n;
        let expected: Vec<u64> = items.iter().map(square).collect();
        for min in [0, 1, 2, 100, 101, 102] {
            assert_eq!(map(&items, min, square), expected, "min {min}");
        }
        assert_eq!(map(&items[..1], 0, square), vec![0]);
        assert_eq!(map(&items[..0], 0, square), Vec::<u64>::new());
        assert_eq!(join(|| 1, || 2), (1, 2));
    }

    /// A thread that leaves a core may run anywhere else it could, and nowhere else.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_that_leaves_a_core_may_run_on_every_other() {
        use rustix::thread::sched_getaffinity;
        let before = sched_getaffinity(None).expect("affinity reads");
        let Some(core) = (0..rustix::thread::CpuSet::MAX_CPU).find(|&c| before.is_set(c)) else {
            panic!("the test runs on some core");
        };
        let after = std::thread::spawn(move || {
            leave(Some(core));
            sched_getaffinity(None).expect("affinity reads")
        })
        .join()
        .expect("the thread does not panic");
        for c in 0..rustix::thread::CpuSet::MAX_CPU {
            let expected = before.is_set(c) && (c != core || before.count() < 2);
            assert_eq!(after.is_set(c), expected, "core {c}");
        }
    }
}
