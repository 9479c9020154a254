//! Where a COPC file's bytes come from: a file on disk, memory (tests, fuzzing) or an HTTP(S) server.
//!
//! How it works: a COPC reader never needs the whole file, only byte ranges — the header and VLRs, each
//! hierarchy page, each node's LAZ chunk — so every source is a [`ByteSource`] answering `read_at(offset,
//! len)`. A file is read with positioned reads (`pread`, `seek_read` on Windows), so several nodes are
//! read at once from background threads without a shared cursor. A range past the end is an error, never
//! a short read.
use std::path::{Path, PathBuf};

/// Random access to a COPC file's bytes. Reads run on several threads at once.
pub trait ByteSource: Send + Sync {
    /// A path or URL, for messages.
    fn name(&self) -> String;
    /// The file's size in bytes.
    fn len(&self) -> u64;
    /// `len` bytes at `offset`; a range outside the file is an error. Errors do not repeat the name.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, String>;
    /// Why no later read will be tried (a server that stopped answering), once that is so.
    fn stopped(&self) -> Option<String> {
        None
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Checks that `offset..offset + len` lies inside a source of `size` bytes.
pub(crate) fn check_range(offset: u64, len: usize, size: u64) -> Result<(), String> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(format!("bytes {offset}..{} are past the end of the {size}-byte file", offset as u128 + len as u128)),
    }
}

/// A file on disk.
pub struct FileSource {
    path: PathBuf,
    file: std::fs::File,
    size: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> std::io::Result<FileSource> {
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(FileSource { path: path.into(), file, size })
    }
}

impl ByteSource for FileSource {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, String> {
        check_range(offset, len, self.size)?;
        let mut buf = vec![0u8; len];
        let mut done = 0usize;
        while done < len {
            #[cfg(unix)]
            let r = std::os::unix::fs::FileExt::read_at(&self.file, &mut buf[done..], offset + done as u64);
            #[cfg(windows)]
            let r = std::os::windows::fs::FileExt::seek_read(&self.file, &mut buf[done..], offset + done as u64);
            match r {
                Ok(0) => return Err(format!("the file ends at byte {} (it shrank while open?)", offset + done as u64)),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("reading bytes {offset}..{}: {e}", offset + len as u64)),
            }
        }
        Ok(buf)
    }
}

/// Bytes in memory (tests and fuzzing).
pub struct MemSource {
    pub name: String,
    pub data: Vec<u8>,
}

impl ByteSource for MemSource {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, String> {
        check_range(offset, len, self.data.len() as u64)?;
        Ok(self.data[offset as usize..offset as usize + len].to_vec())
    }
}
