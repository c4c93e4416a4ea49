//! What a session was shown: the ranges of text each of its packs showed, so that a later pack
//! of the session can send a reference instead of the same lines again.
//!
//! A session is named by its caller and owned by whoever holds it (an access token on a
//! server; nobody locally), and bounded by [`SessionLimits`]: sessions per owner, ranges and
//! bytes of text per session, and an expiry after inactivity. Past a bound the oldest goes
//! first; forgetting a range only means its lines are sent whole again. Three stores keep
//! sessions: [`MemorySessions`] in a process, [`FileSessions`] as a file per session in a store
//! directory, and the PostgreSQL backend (`ctxpack-pg`), shared by every process of a server.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::error::StoreError;
use crate::guard;

/// A session: its owner (an access token's name on a server, empty locally) and its id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    /// Whoever holds the session; one owner never sees another's.
    pub owner: String,
    /// The id its caller named it by.
    pub id: String,
}

/// Lines a pack of a session showed, with their text as shown (masked).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShownRange {
    /// The id of the pack that showed them.
    pub pack: String,
    /// The range's citation in that pack.
    pub citation: String,
    /// The file, relative to the repository's root.
    pub path: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The lines' text as shown.
    pub text: String,
}

/// How much a session store keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions kept per owner; past it the one used least recently is forgotten.
    pub sessions: usize,
    /// Ranges kept per session; past it the oldest are forgotten.
    pub ranges: usize,
    /// Bytes of text kept per session; past it the oldest ranges are forgotten.
    pub bytes: usize,
    /// Seconds without a pack after which a session is forgotten.
    pub idle_secs: u64,
}

impl Default for SessionLimits {
    /// 32 sessions per owner, 1,000 ranges and 2 MiB of text per session (about sixty packs of
    /// 8,000 tokens), forgotten after 4 hours without a pack.
    fn default() -> SessionLimits {
        SessionLimits {
            sessions: 32,
            ranges: 1000,
            bytes: 2 << 20,
            idle_secs: 4 * 3600,
        }
    }
}

/// One session's state: when it was last used and what it was shown, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// Unix seconds of the last pack.
    pub used: u64,
    /// What its packs showed, oldest first.
    pub ranges: Vec<ShownRange>,
}

impl SessionState {
    /// Whether the session was idle past `limits` at `now`.
    pub fn expired(&self, limits: &SessionLimits, now: u64) -> bool {
        now.saturating_sub(self.used) > limits.idle_secs
    }

    /// Adds what a pack showed at `now`, forgetting the oldest ranges past `limits`.
    pub fn add(&mut self, ranges: Vec<ShownRange>, limits: &SessionLimits, now: u64) {
        self.used = self.used.max(now);
        self.ranges.extend(ranges);
        let over = self.ranges.len().saturating_sub(limits.ranges);
        self.ranges.drain(..over);
        let mut bytes: usize = self.ranges.iter().map(|r| r.text.len()).sum();
        let mut first = 0;
        while bytes > limits.bytes && first < self.ranges.len() {
            bytes -= self.ranges[first].text.len();
            first += 1;
        }
        self.ranges.drain(..first);
    }
}

/// Where sessions are kept: the interface every backend implements, which the conformance
/// suite checks.
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// What `key`'s session was shown, oldest first; nothing for a session never used or idle
    /// past the limits at `now`. Writes nothing.
    fn shown(&self, key: &SessionKey, now: u64) -> Result<Vec<ShownRange>, StoreError>;
    /// Adds what a pack showed to `key`'s session at `now` (starting it, or starting it again
    /// when it expired), within the limits: the oldest ranges, idle sessions and the owner's
    /// least recently used sessions are forgotten past them.
    fn add(&self, key: &SessionKey, ranges: Vec<ShownRange>, now: u64) -> Result<(), StoreError>;
    /// The limits it keeps.
    fn limits(&self) -> SessionLimits;
}

/// Sessions in this process's memory: a local MCP server's, which records nothing on disk.
#[derive(Debug, Default)]
pub struct MemorySessions {
    limits: SessionLimits,
    sessions: Mutex<BTreeMap<SessionKey, SessionState>>,
}

impl MemorySessions {
    /// An empty store keeping `limits`.
    pub fn new(limits: SessionLimits) -> MemorySessions {
        MemorySessions {
            limits,
            sessions: Mutex::default(),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<SessionKey, SessionState>> {
        // The map is whole between statements: a panic elsewhere leaves nothing half-done.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SessionStore for MemorySessions {
    fn shown(&self, key: &SessionKey, now: u64) -> Result<Vec<ShownRange>, StoreError> {
        Ok(match self.sessions().get(key) {
            Some(state) if !state.expired(&self.limits, now) => state.ranges.clone(),
            _ => Vec::new(),
        })
    }

    fn add(&self, key: &SessionKey, ranges: Vec<ShownRange>, now: u64) -> Result<(), StoreError> {
        let limits = self.limits;
        let mut sessions = self.sessions();
        sessions.retain(|_, s| !s.expired(&limits, now));
        let state = sessions.entry(key.clone()).or_default();
        state.add(ranges, &limits, now);
        let mut owned: Vec<(u64, SessionKey)> = sessions
            .iter()
            .filter(|(k, _)| k.owner == key.owner)
            .map(|(k, s)| (s.used, k.clone()))
            .collect();
        if owned.len() > limits.sessions {
            owned.sort();
            for (_, old) in owned.drain(..owned.len() - limits.sessions) {
                sessions.remove(&old);
            }
        }
        Ok(())
    }

    fn limits(&self) -> SessionLimits {
        self.limits
    }
}

/// Sessions as files in a store directory (`sessions/`, one JSON file per session, written
/// whole and renamed into place): the command line's, whose processes come and go.
#[derive(Debug)]
pub struct FileSessions {
    root: PathBuf,
    limits: SessionLimits,
}

/// What a session file holds: its key, so a file is never read as another session's.
#[derive(Serialize, Deserialize)]
struct SessionFile {
    owner: String,
    id: String,
    #[serde(flatten)]
    state: SessionState,
}

impl FileSessions {
    /// The sessions of the store at `store_dir`, keeping `limits`.
    pub fn new(store_dir: &Path, limits: SessionLimits) -> FileSessions {
        FileSessions {
            root: store_dir.to_owned(),
            limits,
        }
    }

    fn dir() -> &'static Path {
        Path::new("sessions")
    }

    /// The session's file, named by a digest of its key (an id may hold any character).
    fn file(key: &SessionKey) -> PathBuf {
        let digest = sha256_hex(format!("{}\0{}", key.owner, key.id).as_bytes());
        Self::dir().join(format!("{}.json", &digest[..32]))
    }

    /// The most a session file may hold: the text bound, and as much again for the JSON
    /// around it (escapes, citations); a larger file is not read.
    fn max_file_bytes(&self) -> u64 {
        (self.limits.bytes as u64).saturating_mul(2) + (self.limits.ranges as u64) * 1024 + 4096
    }

    fn corrupt(&self, rel: &Path, detail: &str) -> StoreError {
        StoreError::Corrupt {
            dir: self.root.clone(),
            detail: format!(
                "session file {} {detail}; delete it to start the session afresh",
                self.root.join(rel).display()
            ),
        }
    }

    fn read(&self, key: &SessionKey) -> Result<Option<SessionState>, StoreError> {
        let rel = Self::file(key);
        let Some(file) = guard::open_regular(&self.root, &rel)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        let max = self.max_file_bytes();
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| StoreError::Io {
                path: self.root.join(&rel),
                source,
            })?;
        if bytes.len() as u64 > max {
            return Err(self.corrupt(&rel, "is larger than a session may be"));
        }
        let file: SessionFile = serde_json::from_slice(&bytes)
            .map_err(|e| self.corrupt(&rel, &format!("cannot be read ({e})")))?;
        if file.owner != key.owner || file.id != key.id {
            return Err(self.corrupt(&rel, "belongs to another session"));
        }
        Ok(Some(file.state))
    }

    /// Forgets idle sessions, and the least recently used past the limit (a store directory
    /// has one owner).
    fn prune(&self, now: u64) -> Result<(), StoreError> {
        let dir = self.root.join(Self::dir());
        let io = |source| StoreError::Io {
            path: dir.clone(),
            source,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let meta = entry.metadata().map_err(io)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !meta.is_file() || !name.ends_with(".json") {
                continue;
            }
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            files.push((modified, entry.path()));
        }
        files.sort();
        let idle = files
            .iter()
            .take_while(|(t, _)| now.saturating_sub(*t) > self.limits.idle_secs)
            .count();
        let over = files.len().saturating_sub(self.limits.sessions);
        for (_, path) in &files[..idle.max(over)] {
            // Another process may have removed it first.
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }
}

impl SessionStore for FileSessions {
    fn shown(&self, key: &SessionKey, now: u64) -> Result<Vec<ShownRange>, StoreError> {
        Ok(match self.read(key)? {
            Some(state) if !state.expired(&self.limits, now) => state.ranges,
            _ => Vec::new(),
        })
    }

    fn add(&self, key: &SessionKey, ranges: Vec<ShownRange>, now: u64) -> Result<(), StoreError> {
        let mut state = match self.read(key)? {
            Some(state) if !state.expired(&self.limits, now) => state,
            _ => SessionState::default(),
        };
        state.add(ranges, &self.limits, now);
        let bytes = serde_json::to_vec(&SessionFile {
            owner: key.owner.clone(),
            id: key.id.clone(),
            state,
        })
        .expect("a session serializes");
        guard::create_dirs(&self.root, Self::dir())?;
        let rel = Self::file(key);
        let tmp = Self::dir().join(guard::temp_name(
            &rel.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        ));
        let _ = std::fs::remove_file(self.root.join(&tmp));
        let mut file = guard::create_new(&self.root, &tmp)?;
        let written = file.write_all(&bytes).and_then(|()| file.sync_data());
        drop(file);
        let renamed = written.and_then(|()| {
            guard::no_link(&self.root, &rel).map_err(|e| std::io::Error::other(e.to_string()))?;
            std::fs::rename(self.root.join(&tmp), self.root.join(&rel))
        });
        if let Err(source) = renamed {
            let _ = std::fs::remove_file(self.root.join(&tmp));
            return Err(StoreError::Io {
                path: self.root.join(&rel),
                source,
            });
        }
        self.prune(now)
    }

    fn limits(&self) -> SessionLimits {
        self.limits
    }
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
