//! The cells file of `pcv convert ... -o OUT.copc.laz`: the partition pass's 64 KiB blocks of output
//! records, striped over several temporary files next to the output.
//!
//! How it works: a block's place is one number, its global byte offset `k × BLOCK_BYTES` (k counts
//! the blocks in the order they were handed out); block k lives in file `k mod files` at byte
//! `(k div files) × BLOCK_BYTES`. Writer threads write whole blocks with positioned writes, the build
//! pass reads a cell's blocks back the same way and then frees them (Linux: punched out of their file,
//! so the temporary disk shrinks while the output grows). Why several files: on tmpfs (and other
//! filesystems that lock a file's page cache for each write) the writes to one file are serialised —
//! the H200 machine's /dev/shm took 64 KiB writes from 1 to 16 threads at 2.5–3.2 GB/s into one
//! file and at ~10 GB/s into 8 files — so the 16-core partition pass of 1B points was bound by one
//! file's 36 GB. The partition's workers each write their own file ([`CellsFile::block_in_stripe`]).
use super::partition::BLOCK_BYTES;
use super::Temp;
use crate::convert::ConvertError;
use std::path::Path;

/// The striped temporary files of the cells.
pub(super) struct CellsFile {
    files: Vec<Temp>,
}

impl CellsFile {
    /// `files` temporary files (at least one) next to `out`, empty.
    pub(super) fn new(out: &Path, files: usize) -> Result<CellsFile, ConvertError> {
        let files = (0..files.max(1)).map(|i| Temp::new(out, &format!("cells{i}"))).collect::<Result<_, _>>()?;
        Ok(CellsFile { files })
    }

    /// The file (its index) and byte of the block at global offset `at`.
    fn locate(&self, at: u64) -> (usize, u64) {
        let k = at / BLOCK_BYTES as u64;
        let n = self.files.len() as u64;
        ((k % n) as usize, (k / n) * BLOCK_BYTES as u64)
    }

    /// How many files the blocks are striped over.
    pub(super) fn stripes(&self) -> usize {
        self.files.len()
    }

    /// The global offset of the `j`-th block of file `stripe` (blocks of one file are written by one
    /// thread when each writer takes its own file: no two writes then wait on one file's lock).
    pub(super) fn block_in_stripe(&self, stripe: usize, j: u64) -> u64 {
        (j * self.files.len() as u64 + stripe as u64) * BLOCK_BYTES as u64
    }

    /// The file and byte of the block at global offset `at`.
    fn place(&self, at: u64) -> (&Temp, u64) {
        let (f, pos) = self.locate(at);
        (&self.files[f], pos)
    }

    /// Empties every file.
    pub(super) fn clear(&self) -> Result<(), ConvertError> {
        self.files.iter().try_for_each(|t| t.file.set_len(0).map_err(t.io()))
    }

    /// Writes the block at global offset `at` (at most `BLOCK_BYTES`).
    pub(super) fn write(&self, at: u64, buf: &[u8]) -> Result<(), ConvertError> {
        let (t, pos) = self.place(at);
        write_all_at(&t.file, buf, pos).map_err(t.io())
    }

    /// Reads `buf.len()` bytes of the block at global offset `at`.
    pub(super) fn read(&self, at: u64, buf: &mut [u8]) -> Result<(), ConvertError> {
        let (t, pos) = self.place(at);
        super::read_exact_at(&t.file, buf, pos).map_err(t.io())
    }

    /// The bytes the files take on disk (punched holes take none).
    pub(super) fn disk_bytes(&self) -> u64 {
        self.files.iter().map(|t| t.disk_bytes()).sum()
    }

    /// Frees the disk space of `blocks` (global offsets) once they were read (Linux: punched out of
    /// their files, runs of neighbouring blocks in one call; elsewhere nothing, and the files are
    /// removed at the end).
    pub(super) fn release(&self, blocks: &[(u64, u32)]) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let mut places: Vec<(usize, u64)> = blocks.iter().map(|b| self.locate(b.0)).collect();
            places.sort_unstable();
            let mut i = 0;
            while i < places.len() {
                let (f, start) = places[i];
                let mut end = start + BLOCK_BYTES as u64;
                i += 1;
                while i < places.len() && places[i] == (f, end) {
                    end += BLOCK_BYTES as u64;
                    i += 1;
                }
                // SAFETY: fallocate on a file descriptor this process owns (kept open by `self.files`)
                // over a byte range; it touches no memory of ours. An error (a filesystem without hole
                // punching) only means the space is freed when the file is removed.
                unsafe {
                    libc::fallocate(
                        self.files[f].file.as_raw_fd(),
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        start as libc::off_t,
                        (end - start) as libc::off_t,
                    );
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = blocks;
    }
}

/// Positioned write of all of `buf`.
fn write_all_at(f: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(f, buf, at)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_write(f, &buf[done..], at + done as u64)? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_blocks_read_back_and_release() {
        let dir = std::env::temp_dir().join(format!("pcv-cells-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("o.copc.laz");
        let cells = CellsFile::new(&out, 3).unwrap();
        let block = |k: u64| vec![(k % 251) as u8; if k == 4 { 100 } else { BLOCK_BYTES }];
        for k in [0u64, 5, 1, 4, 2, 3, 6] {
            cells.write(k * BLOCK_BYTES as u64, &block(k)).unwrap();
        }
        for k in 0..7u64 {
            let want = block(k);
            let mut got = vec![0u8; want.len()];
            cells.read(k * BLOCK_BYTES as u64, &mut got).unwrap();
            assert_eq!(got, want, "block {k}");
        }
        // Files 0, 1, 2 hold blocks {0, 3, 6}, {1, 4}, {2, 5}.
        assert_eq!(cells.files.len(), 3);
        let before = cells.disk_bytes();
        assert!(before >= 6 * BLOCK_BYTES as u64, "{before}");
        cells.release(&[(0, 0), (3 * BLOCK_BYTES as u64, 0), (6 * BLOCK_BYTES as u64, 0)]);
        #[cfg(target_os = "linux")]
        assert!(cells.disk_bytes() < before, "released blocks free disk ({} → {})", before, cells.disk_bytes());
        drop(cells);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the temporary files are removed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
