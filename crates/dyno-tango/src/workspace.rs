//! The workspace: one named shared-memory file holding every link and metrics object of
//! a run, so a monitor in another process can attach read-only and watch.
//!
//! # Byte layout (version 1)
//!
//! ```text
//! offset  size  field
//!      0     8  magic = WKSP_MAGIC, stored (Release) once the header is complete
//!      8     8  version = 1
//!     16     8  size of the file in bytes
//!     24     8  pid of the creator (written first, before anything else)
//!     32     8  start time of the creator process, kernel ticks since boot (pid reuse guard)
//!     40     8  start wall-clock time, ns since the Unix epoch
//!     48     8  generation: distinguishes successive runs under one name
//!     56     8  state: 0 building, 1 ready, 2 closed (Release on every change)
//!     64     8  next free offset (bump allocator, creator only)
//!     72     8  object count (Release after the entry is written)
//!     80    48  padding
//!    128  80*N  object table, N = MAX_OBJECTS entries:
//!                 name[48] (UTF-8, zero padded), kind u64, offset u64, size u64, pad u64
//!  16384   ...  objects, each aligned to 128 bytes
//! ```
//!
//! # Lifecycle and stale runs
//! `create` makes the file with O_EXCL. If the name is taken, the existing header's pid
//! (and process start time) decide: a live creator means the name is in use and creation
//! is refused with [`Error::WorkspaceInUse`]; a dead one (a crashed run) means the file is
//! stale and is replaced. A reader (`attach_read_only`) trusts nothing before it has seen
//! the magic, the version and the state `ready`, so a stale, half-built or foreign file is
//! reported, never misread. The creator's handle removes the file when dropped (clean
//! shutdown); the file of a crashed run stays until the next `create` of its name
//! replaces it, or [`clear_stale`] (which `pipeline run` and `pipeline bench` call first)
//! removes every dead run's file of a directory.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::wallclock_ns;
use crate::error::{Error, Result};
use crate::mcache::check_magic;
use crate::region::{Region, SharedPod, REGION_ALIGN};
use crate::sys;

/// Magic of a workspace ("dynowksp").
pub const WKSP_MAGIC: u64 = 0x6479_6e6f_776b_7370;
/// Layout version.
pub const WKSP_VERSION: u64 = 1;
/// Object table entries.
pub const MAX_OBJECTS: usize = 192;
/// Bytes before the first object.
pub const WKSP_HEADER: usize = 16384;
/// Longest object name.
pub const MAX_NAME: usize = 48;
/// Default directory of workspaces.
pub const DEFAULT_DIR: &str = "/dev/shm";

const STATE_BUILDING: u64 = 0;
const STATE_READY: u64 = 1;
const STATE_CLOSED: u64 = 2;

/// The kind of an object in a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// An mcache (frag records).
    Mcache = 1,
    /// A dcache (payloads).
    Dcache = 2,
    /// A reliable consumer's progress.
    Fseq = 3,
    /// Tile metrics.
    TileMetrics = 4,
    /// Link (producer) metrics.
    LinkMetrics = 5,
    /// Consumer metrics.
    ConsumerMetrics = 6,
}

impl ObjectKind {
    fn from_word(w: u64) -> Option<ObjectKind> {
        Some(match w {
            1 => ObjectKind::Mcache,
            2 => ObjectKind::Dcache,
            3 => ObjectKind::Fseq,
            4 => ObjectKind::TileMetrics,
            5 => ObjectKind::LinkMetrics,
            6 => ObjectKind::ConsumerMetrics,
            _ => return None,
        })
    }

    /// Stable name.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Mcache => "mcache",
            ObjectKind::Dcache => "dcache",
            ObjectKind::Fseq => "fseq",
            ObjectKind::TileMetrics => "tile metrics",
            ObjectKind::LinkMetrics => "link metrics",
            ObjectKind::ConsumerMetrics => "consumer metrics",
        }
    }
}

#[repr(C)]
struct Entry {
    name: [AtomicU64; MAX_NAME / 8],
    kind: AtomicU64,
    offset: AtomicU64,
    size: AtomicU64,
    _pad: AtomicU64,
}

#[repr(C)]
struct Header {
    magic: AtomicU64,
    version: AtomicU64,
    size: AtomicU64,
    pid: AtomicU64,
    proc_start: AtomicU64,
    start_ns: AtomicU64,
    generation: AtomicU64,
    state: AtomicU64,
    next_free: AtomicU64,
    count: AtomicU64,
    _pad: [AtomicU64; 6],
    table: [Entry; MAX_OBJECTS],
}

// SAFETY: repr(C), atomics only, valid for all bit patterns.
unsafe impl SharedPod for Entry {}
// SAFETY: as above.
unsafe impl SharedPod for Header {}

const _: () = assert!(std::mem::size_of::<Entry>() == 80);
const _: () = assert!(std::mem::offset_of!(Header, pid) == 24);
const _: () = assert!(std::mem::offset_of!(Header, table) == 128);
const _: () = assert!(std::mem::size_of::<Header>() <= WKSP_HEADER);
const _: () = assert!(WKSP_HEADER.is_multiple_of(REGION_ALIGN));

/// One object of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Name, e.g. `quic->verify` or `verify:0`.
    pub name: String,
    /// Kind.
    pub kind: ObjectKind,
    /// Offset in the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

/// Header facts of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WorkspaceInfo {
    /// Creator pid.
    pub pid: u32,
    /// Start wall-clock time, ns since the Unix epoch.
    pub start_ns: u64,
    /// Generation of the run.
    pub generation: u64,
    /// Size in bytes.
    pub size: u64,
}

/// Where and how big a workspace is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceOptions {
    /// Name; the file is `<dir>/dyno-<name>`.
    pub name: String,
    /// Directory (default [`DEFAULT_DIR`]).
    pub dir: Option<PathBuf>,
    /// Size in bytes (the file is sparse on tmpfs until touched).
    pub size: usize,
}

/// A mapped workspace: created (writable, owner) or attached read-only.
#[derive(Debug)]
pub struct Workspace {
    path: PathBuf,
    region: Region,
    /// True for the creator: it allocates objects and removes the file on drop.
    owner: bool,
    /// Pid of a crashed run whose stale file `create` replaced.
    replaced_stale: Option<u32>,
}

/// Whether process `pid`, started at `start_ticks` (0: not recorded), still runs: a pid
/// reused by a later process has another start time.
fn creator_alive(pid: u32, start_ticks: u64) -> bool {
    sys::pid_alive(pid)
        && (start_ticks == 0 || sys::process_start_ticks(pid).is_none_or(|s| s == start_ticks))
}

/// A workspace file whose creator is gone, removed by [`clear_stale`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleWorkspace {
    /// The file.
    pub path: PathBuf,
    /// Its creator's pid (0 when the file died too young to name it).
    pub pid: u32,
    /// Its size in bytes (shared memory it held).
    pub bytes: u64,
}

/// Removes every workspace file in `dir` (default [`DEFAULT_DIR`]) whose creator is gone:
/// what a pipeline killed outright (SIGKILL, the OOM killer) left, which a clean stop
/// removes. Only dyno workspaces (`dyno-*` files with a workspace's magic) are touched, and
/// only those of a dead creator; returns what was removed.
pub fn clear_stale(dir: Option<&Path>) -> Vec<StaleWorkspace> {
    let dir = dir.unwrap_or(Path::new(DEFAULT_DIR));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let is_workspace_name = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("dyno-"));
        let path = entry.path();
        if !is_workspace_name || !has_workspace_magic(&path) {
            continue;
        }
        let Ok(pid) = Workspace::live_owner(&path) else {
            continue;
        };
        let bytes = entry.metadata().map_or(0, |m| m.len());
        if std::fs::remove_file(&path).is_ok() {
            out.push(StaleWorkspace { path, pid, bytes });
        }
    }
    out
}

/// Whether the file at `path` starts with [`WKSP_MAGIC`].
fn has_workspace_magic(path: &Path) -> bool {
    let mut head = [0u8; 8];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| u64::from_le_bytes(head) == WKSP_MAGIC)
}

/// The file path of workspace `name` in `dir` (default [`DEFAULT_DIR`]).
pub fn workspace_path(name: &str, dir: Option<&Path>) -> PathBuf {
    dir.unwrap_or(Path::new(DEFAULT_DIR))
        .join(format!("dyno-{name}"))
}

/// The longest workspace name (its file is `dyno-NAME` in a directory).
pub const MAX_WORKSPACE_NAME: usize = 64;

/// What is wrong with `name` as the name of a workspace or of an object in one, if
/// anything (a config check reports it at its key before anything is created).
pub fn name_problem(name: &str, max: usize) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-:>@".contains(&b));
    (!ok).then(|| format!("name {name:?} must be 1-{max} characters of [A-Za-z0-9_.-:>@]"))
}

fn check_name(name: &str, max: usize) -> Result<()> {
    name_problem(name, max).map_or(Ok(()), |why| Err(Error::Invalid(why)))
}

impl Workspace {
    /// Creates a workspace, replacing a stale one left by a crashed run.
    pub fn create(opts: &WorkspaceOptions) -> Result<Workspace> {
        check_name(&opts.name, MAX_WORKSPACE_NAME)?;
        if opts.name.contains('/') || opts.size < WKSP_HEADER + REGION_ALIGN {
            return Err(Error::Invalid(format!(
                "workspace {:?}: size {} is below the minimum {}",
                opts.name,
                opts.size,
                WKSP_HEADER + REGION_ALIGN
            )));
        }
        let path = workspace_path(&opts.name, opts.dir.as_deref());
        let mut replaced_stale = None;
        let file = match Self::create_file(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let pid = Self::live_owner(&path)?;
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                replaced_stale = Some(pid);
                Self::create_file(&path).map_err(|e| Error::io(&path, e))?
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let mut ws = Self::format(file, &path, opts.size).inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
        })?;
        ws.replaced_stale = replaced_stale;
        Ok(ws)
    }

    fn create_file(path: &Path) -> std::io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }

    /// Checks the creator of an existing file: Err(WorkspaceInUse) when it is alive,
    /// Ok(pid) when the file is stale.
    fn live_owner(path: &Path) -> Result<u32> {
        let mut head = [0u8; 40];
        let n = File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| Error::io(path, e))?;
        if n < 40 {
            return Ok(0); // Too short to hold a pid: a creation that died immediately.
        }
        let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8"));
        let pid = word(24) as u32;
        if creator_alive(pid, word(32)) {
            Err(Error::WorkspaceInUse {
                path: path.to_path_buf(),
                pid,
            })
        } else {
            Ok(pid)
        }
    }

    fn format(file: File, path: &Path, size: usize) -> Result<Workspace> {
        file.set_len(size as u64).map_err(|e| Error::io(path, e))?;
        // SAFETY: the file was just created by us with O_EXCL; other processes only map
        // it and access it through atomics (`Region`), never truncate it.
        let map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| Error::io(path, e))?;
        let region = Region::from_map_mut(map);
        let h: &Header = region.get(0)?;
        let pid = std::process::id();
        h.pid.store(pid as u64, Ordering::Relaxed);
        h.proc_start.store(
            sys::process_start_ticks(pid).unwrap_or(0),
            Ordering::Relaxed,
        );
        let now = wallclock_ns();
        h.start_ns.store(now, Ordering::Relaxed);
        h.generation
            .store(now ^ ((pid as u64) << 32), Ordering::Relaxed);
        h.size.store(size as u64, Ordering::Relaxed);
        h.version.store(WKSP_VERSION, Ordering::Relaxed);
        h.next_free.store(WKSP_HEADER as u64, Ordering::Relaxed);
        h.count.store(0, Ordering::Relaxed);
        h.state.store(STATE_BUILDING, Ordering::Relaxed);
        h.magic.store(WKSP_MAGIC, Ordering::Release);
        Ok(Workspace {
            path: path.to_path_buf(),
            region,
            owner: true,
            replaced_stale: None,
        })
    }

    /// Attaches read-only to workspace `name` in the default directory.
    pub fn attach_read_only(name: &str) -> Result<Workspace> {
        Self::attach_read_only_at(&workspace_path(name, None))
    }

    /// Attaches read-only to the workspace file at `path`.
    pub fn attach_read_only_at(path: &Path) -> Result<Workspace> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: a read-only shared map; the bytes are only read through atomics.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        if map.len() < WKSP_HEADER {
            return Err(Error::Invalid(format!(
                "{}: {} bytes is too short for a workspace",
                path.display(),
                map.len()
            )));
        }
        let region = Region::from_map(map);
        let h: &Header = region.get(0)?;
        check_magic("workspace", &h.magic, WKSP_MAGIC, &h.version, WKSP_VERSION)?;
        let state = h.state.load(Ordering::Acquire);
        if state != STATE_READY {
            return Err(Error::WorkspaceNotReady {
                path: path.to_path_buf(),
                state,
            });
        }
        Ok(Workspace {
            path: path.to_path_buf(),
            region,
            owner: false,
            replaced_stale: None,
        })
    }

    fn header(&self) -> &Header {
        self.region.get(0).expect("header checked at create/attach")
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Pid of the crashed run whose stale file `create` replaced, if any (0 when the
    /// stale file was too short to name one).
    pub fn replaced_stale(&self) -> Option<u32> {
        self.replaced_stale
    }

    /// Header facts.
    pub fn info(&self) -> WorkspaceInfo {
        let h = self.header();
        WorkspaceInfo {
            pid: h.pid.load(Ordering::Relaxed) as u32,
            start_ns: h.start_ns.load(Ordering::Relaxed),
            generation: h.generation.load(Ordering::Relaxed),
            size: h.size.load(Ordering::Relaxed),
        }
    }

    /// Whether the creator still runs (a workspace still marked ready whose creator is
    /// gone was left by a run killed outright).
    pub fn creator_alive(&self) -> bool {
        let h = self.header();
        creator_alive(
            h.pid.load(Ordering::Relaxed) as u32,
            h.proc_start.load(Ordering::Relaxed),
        )
    }

    /// True while the creator has not closed it.
    pub fn is_ready(&self) -> bool {
        self.header().state.load(Ordering::Acquire) == STATE_READY
    }

    /// Places a zeroed object of `size` bytes named `name` (creator only, before or after
    /// `mark_ready`).
    pub fn alloc(&mut self, kind: ObjectKind, name: &str, size: usize) -> Result<Region> {
        if !self.owner {
            return Err(Error::Invalid(format!(
                "{}: cannot allocate in a workspace attached read-only",
                self.path.display()
            )));
        }
        check_name(name, MAX_NAME)?;
        if self.find(kind, name).is_ok() {
            return Err(Error::Invalid(format!(
                "{}: a {} named {name:?} already exists",
                self.path.display(),
                kind.name()
            )));
        }
        let h = self.header();
        let count = h.count.load(Ordering::Relaxed) as usize;
        let start = h.next_free.load(Ordering::Relaxed) as usize;
        let end = start
            .checked_add(size.max(1))
            .map(|e| e.next_multiple_of(REGION_ALIGN));
        let full = || Error::WorkspaceFull {
            path: self.path.clone(),
            object: name.to_string(),
            bytes: size as u64,
        };
        let end = end.filter(|&e| e <= self.region.len()).ok_or_else(full)?;
        if count >= MAX_OBJECTS {
            return Err(full());
        }
        debug_assert!(start.is_multiple_of(REGION_ALIGN));
        let e = &h.table[count];
        let mut bytes = [0u8; MAX_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        for (w, b) in e.name.iter().zip(bytes.chunks_exact(8)) {
            w.store(
                u64::from_le_bytes(b.try_into().expect("8")),
                Ordering::Relaxed,
            );
        }
        e.kind.store(kind as u64, Ordering::Relaxed);
        e.offset.store(start as u64, Ordering::Relaxed);
        e.size.store(size as u64, Ordering::Relaxed);
        h.next_free.store(end as u64, Ordering::Relaxed);
        h.count.store(count as u64 + 1, Ordering::Release);
        self.region.sub(start, size)
    }

    /// Marks the workspace ready: readers may attach.
    pub fn mark_ready(&self) {
        self.header().state.store(STATE_READY, Ordering::Release);
    }

    /// Every object, in creation order.
    pub fn objects(&self) -> Vec<ObjectInfo> {
        let h = self.header();
        let count = (h.count.load(Ordering::Acquire) as usize).min(MAX_OBJECTS);
        h.table[..count]
            .iter()
            .filter_map(|e| {
                let mut bytes = Vec::with_capacity(MAX_NAME);
                for w in &e.name {
                    bytes.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
                }
                let len = bytes.iter().position(|&b| b == 0).unwrap_or(MAX_NAME);
                bytes.truncate(len);
                Some(ObjectInfo {
                    name: String::from_utf8(bytes).ok()?,
                    kind: ObjectKind::from_word(e.kind.load(Ordering::Relaxed))?,
                    offset: e.offset.load(Ordering::Relaxed),
                    size: e.size.load(Ordering::Relaxed),
                })
            })
            .collect()
    }

    /// The region of object `name` of `kind`.
    pub fn find(&self, kind: ObjectKind, name: &str) -> Result<Region> {
        let o = self
            .objects()
            .into_iter()
            .find(|o| o.kind == kind && o.name == name)
            .ok_or_else(|| Error::NoSuchObject {
                kind: kind.name(),
                name: name.to_string(),
            })?;
        self.region.sub(o.offset as usize, o.size as usize)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if self.owner {
            self.header().state.store(STATE_CLOSED, Ordering::Release);
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
#[cfg_attr(miri, allow(unused_imports))]
mod tests {
    use super::*;
    use crate::metrics::TileMetrics;

    fn opts(dir: &Path, name: &str) -> WorkspaceOptions {
        WorkspaceOptions {
            name: name.into(),
            dir: Some(dir.to_path_buf()),
            size: 1 << 20,
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn create_alloc_attach_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = Workspace::create(&opts(dir.path(), "t1")).unwrap();
        let path = ws.path().to_path_buf();
        assert!(matches!(
            Workspace::attach_read_only_at(&path),
            Err(Error::WorkspaceNotReady { .. })
        ));
        let r = ws
            .alloc(ObjectKind::TileMetrics, "verify:0", TileMetrics::FOOTPRINT)
            .unwrap();
        TileMetrics::new(&r)
            .unwrap()
            .loops
            .store(42, Ordering::Relaxed);
        assert!(ws.alloc(ObjectKind::TileMetrics, "verify:0", 256).is_err());
        assert!(
            ws.alloc(ObjectKind::Mcache, "x", 1 << 21).is_err(),
            "too big"
        );
        ws.mark_ready();
        let ro = Workspace::attach_read_only_at(&path).unwrap();
        assert_eq!(ro.info().pid, std::process::id());
        let objs = ro.objects();
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0].name, "verify:0");
        let r = ro.find(ObjectKind::TileMetrics, "verify:0").unwrap();
        let m = TileMetrics::join(&r).unwrap();
        assert_eq!(m.loops.load(Ordering::Relaxed), 42);
        assert!(ro.find(ObjectKind::Mcache, "verify:0").is_err());
        drop(ws);
        assert!(!path.exists(), "removed on clean shutdown");
        assert!(!ro.is_ready(), "a watcher sees the close");
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_live_owner_is_refused_and_a_stale_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::create(&opts(dir.path(), "t2")).unwrap();
        match Workspace::create(&opts(dir.path(), "t2")) {
            Err(Error::WorkspaceInUse { pid, .. }) => assert_eq!(pid, std::process::id()),
            other => panic!("expected in use, got {other:?}"),
        }
        // Simulate a crash: the file stays, its creator is a dead process.
        let path = ws.path().to_path_buf();
        std::mem::forget(ws);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[24..32].copy_from_slice(&(dead as u64).to_le_bytes());
        bytes[32..40].copy_from_slice(&0u64.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let ws = Workspace::create(&opts(dir.path(), "t2")).unwrap();
        assert_eq!(ws.replaced_stale(), Some(dead));
        assert_eq!(ws.info().pid, std::process::id());
        // A garbage file that is too short is stale too, and never attachable.
        let junk = workspace_path("t3", Some(dir.path()));
        std::fs::write(&junk, b"junk").unwrap();
        assert!(Workspace::attach_read_only_at(&junk).is_err());
        let ws3 = Workspace::create(&opts(dir.path(), "t3")).unwrap();
        assert_eq!(ws3.replaced_stale(), Some(0));
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn clearing_removes_dead_runs_workspaces_of_any_name_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let live = Workspace::create(&opts(dir.path(), "live")).unwrap();
        let dead = Workspace::create(&opts(dir.path(), "dead")).unwrap();
        dead.mark_ready();
        assert!(dead.creator_alive() && live.creator_alive());
        let path = dead.path().to_path_buf();
        std::mem::forget(dead);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[24..32].copy_from_slice(&(gone as u64).to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let ro = Workspace::attach_read_only_at(&path).unwrap();
        assert!(
            !ro.creator_alive(),
            "a killed run's workspace is still marked ready"
        );
        // Not workspaces: a foreign file of the same prefix, a file of another name.
        std::fs::write(dir.path().join("dyno-notes"), vec![1u8; 64]).unwrap();
        std::fs::write(dir.path().join("other"), vec![1u8; 64]).unwrap();
        let cleared = clear_stale(Some(dir.path()));
        assert_eq!(
            cleared,
            [StaleWorkspace {
                path: path.clone(),
                pid: gone,
                bytes: 1 << 20,
            }]
        );
        assert!(!path.exists() && live.path().exists());
        assert!(dir.path().join("dyno-notes").exists() && dir.path().join("other").exists());
    }
}
