//! NCCL, loaded at run time: the library found, its communicators, and the two reductions the
//! multi-GPU backend (`render/multi.rs`) composites with.
//!
//! How it works: cudarc's `nccl` feature gives the bindings' types (`ncclUniqueId`, `ncclComm_t`, the
//! data-type and reduction enums), but its loader is not used: it `dlopen`s only the names
//! `libnccl.so`, `libnccl.so.13`, `.12`, …, `.1`, never `libnccl.so.2` — the one name NCCL installs
//! (pip's `nvidia-nccl-cu13` ships only `nvidia/nccl/lib/libnccl.so.2`) — and panics when none loads.
//! So [`library`] loads it itself, once, with `libloading` (the crate cudarc loads with), from the first
//! of: `PCV_NCCL_LIBRARY` (the file, or a folder holding `libnccl.so.2`); the names `libnccl.so.2` and
//! `libnccl.so` on the loader's path (`LD_LIBRARY_PATH`, ldconfig); `nvidia/nccl/lib/libnccl.so.2` under
//! the site-packages of `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `/opt/*/.venv`, `/usr/local/lib/python3*`,
//! `/usr/lib/python3*` and `~/.local`; `$CUDA_HOME/lib64` and `/usr/local/cuda/lib64`. Every symbol is
//! looked up when it loads, so a library that lacks one is an error, never a panic later; a missing
//! library is [`RenderError::Nccl`] naming every place searched and the remedy.
//!
//! [`Comms::init_all`] makes one communicator per device with `ncclCommInitAll` (one process, one
//! thread: the pattern NCCL documents for a process that drives all its GPUs). Before that it sets
//! `NCCL_NVLS_ENABLE=0` unless the environment sets it: NVLink SHARP (multicast objects) stays off, as
//! the GPU machine's notes require; pcv never calls `cuMulticastCreate` itself. NCCL refuses two ranks
//! on one device ("Duplicate GPU detected"), so shares of one GPU are combined before NCCL sees them
//! (a one-rank communicator then only copies). The reductions enqueue one call per rank between
//! `ncclGroupStart` and `ncclGroupEnd`, on each rank's stream; they return once enqueued.
use crate::RenderError;
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file NCCL installs (its soname).
pub const NCCL_SONAME: &str = "libnccl.so.2";
/// The environment variable that names the library (a file, or a folder holding [`NCCL_SONAME`]).
pub const NCCL_ENV: &str = "PCV_NCCL_LIBRARY";

type NcclResult = c_int;
type Stream = *mut cudarc::nccl::sys::CUstream_st;

/// The entry points pcv calls, resolved when the library loads.
struct Fns {
    get_version: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    get_error_string: unsafe extern "C" fn(NcclResult) -> *const c_char,
    comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> NcclResult,
    comm_destroy: unsafe extern "C" fn(ncclComm_t) -> NcclResult,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        Stream,
    ) -> NcclResult,
    reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        c_int,
        ncclComm_t,
        Stream,
    ) -> NcclResult,
    group_start: unsafe extern "C" fn() -> NcclResult,
    group_end: unsafe extern "C" fn() -> NcclResult,
}

/// The loaded library.
pub struct Nccl {
    fns: Fns,
    /// Where it was loaded from (a path, or the name the loader resolved).
    pub path: String,
    /// NCCL's version code, e.g. 22803 for 2.28.3.
    pub version: i32,
    _lib: libloading::Library,
}

// The unique id type is only named to check, at compile time, that cudarc's bindings are the ones used.
const _: () = assert!(std::mem::size_of::<ncclUniqueId>() == 128, "ncclUniqueId is 128 bytes");

impl Nccl {
    /// "2.28.3".
    pub fn version_string(&self) -> String {
        version_text(self.version)
    }

    fn check(&self, what: &str, r: NcclResult) -> Result<(), RenderError> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: ncclGetErrorString takes any result code and returns a static NUL-terminated string.
        let text = unsafe { (self.fns.get_error_string)(r) };
        let text = if text.is_null() {
            String::from("no description")
        } else {
            // SAFETY: non-null, NUL-terminated and static (NCCL's table of messages).
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(RenderError::Nccl(format!("{what} failed with NCCL error {r} ({text})")))
    }
}

/// NCCL's version code as text: 22803 → "2.28.3" (codes from 2.9 on), 2708 → "2.7.8" (before).
pub fn version_text(v: i32) -> String {
    let (major, minor, patch) =
        if v >= 10000 { (v / 10000, (v % 10000) / 100, v % 100) } else { (v / 1000, (v % 1000) / 100, v % 100) };
    format!("{major}.{minor}.{patch}")
}

/// The places [`library`] tries, in order (files that exist or names for the loader).
pub fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(v) = std::env::var_os(NCCL_ENV) {
        let p = PathBuf::from(v);
        out.push(if p.is_dir() { p.join(NCCL_SONAME) } else { p });
    }
    out.push(PathBuf::from(NCCL_SONAME));
    out.push(PathBuf::from("libnccl.so"));
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v).join("lib"));
        }
    }
    for base in subdirs(Path::new("/opt")) {
        roots.push(base.join(".venv/lib"));
    }
    roots.extend([PathBuf::from("/usr/local/lib"), PathBuf::from("/usr/lib")]);
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join(".local/lib"));
    }
    for root in roots {
        for py in subdirs(&root)
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
        {
            for pkgs in ["site-packages", "dist-packages"] {
                out.push(py.join(pkgs).join("nvidia/nccl/lib").join(NCCL_SONAME));
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            out.push(PathBuf::from(v).join("lib64").join(NCCL_SONAME));
        }
    }
    out.push(PathBuf::from("/usr/local/cuda/lib64").join(NCCL_SONAME));
    out.dedup();
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// NCCL, loaded on first use (see the module doc for where it is looked for).
pub fn library() -> Result<&'static Nccl, RenderError> {
    static LIB: OnceLock<Result<Nccl, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| RenderError::Nccl(e.clone()))
}

fn load() -> Result<Nccl, String> {
    if cfg!(not(target_os = "linux")) {
        return Err("NCCL exists for Linux only: more than one GPU (--gpus) needs a Linux machine".into());
    }
    let mut tried = Vec::new();
    for c in candidates() {
        // A path that does not exist is recorded and skipped; a bare name goes to the loader's search.
        let is_name = c.components().count() == 1;
        if !is_name && !c.exists() {
            tried.push(format!("{} (absent)", c.display()));
            continue;
        }
        // SAFETY: loading NCCL runs its initializers, which only set up its own state; the handle is
        // kept for the life of the process (in the OnceLock) so the function pointers stay valid.
        match unsafe { libloading::Library::new(&c) } {
            Ok(lib) => return resolve(lib, c.display().to_string()),
            Err(e) => tried.push(format!("{} ({e})", c.display())),
        }
    }
    Err(format!(
        "the NCCL library ({NCCL_SONAME}) was not found; tried: {}. Install NCCL (e.g. `pip install nvidia-nccl-cu13`) or set {NCCL_ENV} to the file or its folder",
        tried.join("; ")
    ))
}

fn resolve(lib: libloading::Library, path: String) -> Result<Nccl, String> {
    fn sym<T: Copy>(lib: &libloading::Library, path: &str, name: &str) -> Result<T, String> {
        // SAFETY: each symbol is looked up with the type of NCCL's C declaration (nccl.h, as cudarc's
        // bindings declare it); the pointer is copied out and used only while the library stays loaded.
        unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{path} lacks {name}: {e}"))
    }
    let fns = Fns {
        get_version: sym(&lib, &path, "ncclGetVersion")?,
        get_error_string: sym(&lib, &path, "ncclGetErrorString")?,
        comm_init_all: sym(&lib, &path, "ncclCommInitAll")?,
        comm_destroy: sym(&lib, &path, "ncclCommDestroy")?,
        all_reduce: sym(&lib, &path, "ncclAllReduce")?,
        reduce: sym(&lib, &path, "ncclReduce")?,
        group_start: sym(&lib, &path, "ncclGroupStart")?,
        group_end: sym(&lib, &path, "ncclGroupEnd")?,
    };
    let mut version: c_int = 0;
    // SAFETY: `version` is a valid out-pointer for the call.
    let r = unsafe { (fns.get_version)(&mut version) };
    if r != 0 {
        return Err(format!("{path}: ncclGetVersion failed ({r})"));
    }
    Ok(Nccl { fns, path, version, _lib: lib })
}

/// Sets `NCCL_NVLS_ENABLE=0` unless the environment already says otherwise; returns the value in force.
pub fn keep_nvls_off() -> String {
    match std::env::var("NCCL_NVLS_ENABLE") {
        Ok(v) => v,
        Err(_) => {
            // pcv sets it before any NCCL communicator exists, from the thread that makes them; NCCL
            // reads it (getenv) when a communicator is made.
            std::env::set_var("NCCL_NVLS_ENABLE", "0");
            "0".into()
        }
    }
}

/// One communicator per device, rank i on `devices[i]`.
pub struct Comms {
    nccl: &'static Nccl,
    comms: Vec<ncclComm_t>,
    pub devices: Vec<i32>,
}

/// One rank's part of a reduction: its send and receive buffers (device addresses on its device) and
/// its stream.
#[derive(Clone, Copy, Debug)]
pub struct RankBuffers {
    pub send: u64,
    pub recv: u64,
    pub stream: cudarc::driver::sys::CUstream,
}

impl Comms {
    /// Communicators for `devices` (CUDA ordinals, each once), with NVLink SHARP off.
    pub fn init_all(devices: &[i32]) -> Result<Comms, RenderError> {
        let nccl = library()?;
        keep_nvls_off();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        let n = c_int::try_from(devices.len()).map_err(|_| RenderError::Nccl("too many devices".into()))?;
        // SAFETY: `comms` has room for `devices.len()` communicators and `devices` holds as many ordinals.
        let r = unsafe { (nccl.fns.comm_init_all)(comms.as_mut_ptr(), n, devices.as_ptr()) };
        nccl.check(&format!("ncclCommInitAll on devices {devices:?}"), r)?;
        Ok(Comms { nccl, comms, devices: devices.to_vec() })
    }

    pub fn nccl(&self) -> &'static Nccl {
        self.nccl
    }

    fn grouped(&self, what: &str, mut call: impl FnMut(usize) -> NcclResult) -> Result<(), RenderError> {
        // SAFETY: group calls take no arguments; every group started here is ended below.
        self.nccl.check("ncclGroupStart", unsafe { (self.nccl.fns.group_start)() })?;
        let mut first_err = Ok(());
        for rank in 0..self.comms.len() {
            let r = call(rank);
            if first_err.is_ok() {
                first_err = self.nccl.check(&format!("{what} on rank {rank}"), r);
            }
        }
        // SAFETY: ends the group started above.
        let end = self.nccl.check("ncclGroupEnd", unsafe { (self.nccl.fns.group_end)() });
        first_err.and(end)
    }

    /// `ncclAllReduce` with `ncclMin` over `count` u64 words on every rank (in place when send == recv).
    ///
    /// # Safety
    /// `bufs[i]` belongs to rank i: both buffers hold `count` u64 words on `devices[i]`, and the stream
    /// is a live stream of that device's context.
    pub unsafe fn all_reduce_min_u64(&self, bufs: &[RankBuffers], count: usize) -> Result<(), RenderError> {
        self.check_ranks(bufs)?;
        self.grouped("ncclAllReduce(min, uint64)", |rank| {
            let b = bufs[rank];
            // SAFETY: this function's contract.
            unsafe {
                (self.nccl.fns.all_reduce)(
                    b.send as *const c_void,
                    b.recv as *mut c_void,
                    count,
                    ncclDataType_t::ncclUint64,
                    ncclRedOp_t::ncclMin,
                    self.comms[rank],
                    b.stream as Stream,
                )
            }
        })
    }

    /// `ncclReduce` with `ncclMin` over `count` u64 words into rank `root`'s receive buffer.
    ///
    /// # Safety
    /// As [`Comms::all_reduce_min_u64`] (only the root's receive buffer is written).
    pub unsafe fn reduce_min_u64(&self, bufs: &[RankBuffers], count: usize, root: usize) -> Result<(), RenderError> {
        self.check_ranks(bufs)?;
        let root_c = c_int::try_from(root).map_err(|_| RenderError::Nccl(format!("root rank {root}")))?;
        if root >= self.comms.len() {
            return Err(RenderError::Nccl(format!("root rank {root} of {} ranks", self.comms.len())));
        }
        self.grouped("ncclReduce(min, uint64)", |rank| {
            let b = bufs[rank];
            // SAFETY: this function's contract.
            unsafe {
                (self.nccl.fns.reduce)(
                    b.send as *const c_void,
                    b.recv as *mut c_void,
                    count,
                    ncclDataType_t::ncclUint64,
                    ncclRedOp_t::ncclMin,
                    root_c,
                    self.comms[rank],
                    b.stream as Stream,
                )
            }
        })
    }

    fn check_ranks(&self, bufs: &[RankBuffers]) -> Result<(), RenderError> {
        if bufs.len() != self.comms.len() {
            return Err(RenderError::Nccl(format!("{} buffers for {} ranks", bufs.len(), self.comms.len())));
        }
        Ok(())
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for &c in &self.comms {
            if !c.is_null() {
                // SAFETY: each communicator was made by ncclCommInitAll and is destroyed once; callers
                // synchronize the streams that used it before dropping (MultiRasterizer's Drop).
                let _ = unsafe { (self.nccl.fns.comm_destroy)(c) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_the_env_var_and_the_soname() {
        let c = candidates();
        assert!(c.iter().any(|p| p == Path::new(NCCL_SONAME)), "{c:?}");
        assert!(c.iter().any(|p| p.ends_with("lib64/libnccl.so.2")), "{c:?}");
    }

    #[test]
    fn a_missing_library_names_what_was_searched() {
        // Only this test sets the variable; `load` (not the cached `library`) reads it afresh.
        std::env::set_var(NCCL_ENV, "/nonexistent/pcv-test/libnccl.so.2");
        let r = load();
        std::env::remove_var(NCCL_ENV);
        match r {
            Err(e) => {
                assert!(e.contains("/nonexistent/pcv-test/libnccl.so.2 (absent)"), "{e}");
                assert!(e.contains(NCCL_ENV) && e.contains("nvidia-nccl-cu13"), "{e}");
            }
            // A machine with NCCL installed finds it elsewhere on the list.
            Ok(n) => assert!(n.version >= 20000, "NCCL {} from {}", n.version, n.path),
        }
    }

    #[test]
    fn version_codes_read_as_text() {
        assert_eq!(version_text(22803), "2.28.3");
        assert_eq!(version_text(2708), "2.7.8");
    }
}
