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
        let mut file = crate::guard::open(
            dir,
            Path::new("writer.lock"),
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        if wait {
            file.lock().map_err(io)?;
        } else {
            // A child another thread of this process is starting shares every open file
            // until it replaces its program (and closes them): for that moment it holds a lock
            // this process just released. Trying again for a moment rides that out; a real
            // writer holds the lock far longer.
            let mut tries = 0;
            let locked = loop {
                match file.try_lock() {
                    Err(TryLockError::WouldBlock) if tries < 20 => {
                        tries += 1;
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    other => break other,
                }
            };
            match locked {
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
