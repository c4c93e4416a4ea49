//! Progress and cancellation as values.
//!
//! A long operation (index, import, vsync, eval) takes a [`Control`]: it reports
//! [`Progress`] events to the control's sink, and checks its cancellation flag between units of
//! work (files, batches, tasks). A cancelled operation commits nothing it had not committed
//! before the check and ends with [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled).
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use ctxpack_api::{Control, Progress};
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = seen.clone();
//! let control = Control::new().with_progress(move |p: &Progress| sink.lock().unwrap().push(p.done));
//! let cancel = control.canceller();
//! control.report(Progress { phase: "reading", done: 3, total: Some(10) });
//! cancel.cancel();
//! assert!(control.check().is_err());
//! assert_eq!(*seen.lock().unwrap(), [3]);
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// One progress event: how far a phase of an operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The phase: `reading`, `chunking`, `lexical`, `committing` (index, in that
    /// order), `checking`, `importing` (import), `embedding` (vsync), `tasks` (eval).
    ///
    /// Indexing reports each phase when it starts (`done` 0) and when it ends (`done` equal
    /// to `total`), and in between at least every 256 files or 8 MiB of content, counted, not
    /// timed: the same run sends the same events on every machine.
    pub phase: &'static str,
    /// Units done in this phase (files, documents, tasks), counted from 0 in each phase.
    pub done: u64,
    /// Units in this phase, when known.
    pub total: Option<u64>,
}

type Sink = Arc<dyn Fn(&Progress) + Send + Sync>;

/// A progress sink and a cancellation flag, handed to long operations.
#[derive(Clone, Default)]
pub struct Control {
    sink: Option<Sink>,
    cancelled: Arc<AtomicBool>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("progress", &self.sink.is_some())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Cancels the operations of the [`Control`] it came from, from any thread.
#[derive(Clone, Debug)]
pub struct Canceller(Arc<AtomicBool>);

impl Canceller {
    /// Asks the operation to stop at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Control {
    /// No progress reports, never cancelled (until a [`Canceller`] says so).
    pub fn new() -> Control {
        Control::default()
    }

    /// Sends progress events to `sink` (called on the operation's thread).
    pub fn with_progress(mut self, sink: impl Fn(&Progress) + Send + Sync + 'static) -> Control {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// A handle that cancels this control's operations.
    pub fn canceller(&self) -> Canceller {
        Canceller(self.cancelled.clone())
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Reports a progress event.
    pub fn report(&self, progress: Progress) {
        if let Some(sink) = &self.sink {
            sink(&progress);
        }
    }

    /// `Err(Cancelled)` once cancellation was asked for.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::new(
                ErrorKind::Cancelled,
                "the operation was cancelled; nothing after the last completed step was written",
            ))
        } else {
            Ok(())
        }
    }
}
