//! The single-writer lock: an OS file lock on `writer.lock`, holding the writer's pid.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::StoreError;

/// Held while a process writes to a store; released on drop (and by the OS if the process
/// dies, so a crashed writer never leaves a stale lock).
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock, failing with [`StoreError::Locked`] if another process has it, or
    /// waiting for it when `wait` is set.
    pub fn acquire(dir: &Path, wait: bool) -> Result<WriterLock, StoreError> {
        let path = dir.join("writer.lock");
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        if wait {
            file.lock().map_err(io)?;
        } else {
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    return Err(StoreError::Locked {
                        dir: dir.to_owned(),
                        pid: holder.trim().parse().unwrap_or(0),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(WriterLock { _file: file })
    }
}
