//! Stage `file`: inputs are read whole (gunzipped as needed); outputs appear whole or not at
//! all. Data goes to a temporary file in the destination's directory and is renamed over the
//! destination only once complete.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::Result;

/// A file being written: data goes to a temporary file beside the destination, which
/// [`AtomicFile::commit`] renames over it. Dropped uncommitted, it leaves nothing behind.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    pub fn create(dest: &Path) -> Result<Self> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".tracesql-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir, e))?;
        // Temporary files are private (0600); the finished output is an ordinary file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let readable = std::fs::Permissions::from_mode(0o644);
            std::fs::set_permissions(tmp.path(), readable).map_err(|e| Error::io(dir, e))?;
        }
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// A buffered writer into the temporary file.
    pub fn writer(&mut self) -> BufWriter<&mut std::fs::File> {
        BufWriter::with_capacity(1 << 20, self.tmp.as_file_mut())
    }

    /// The temporary file itself, for writers that do their own buffering.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// Move the complete file into place.
    pub fn commit(self) -> Result<()> {
        let dest = self.dest;
        self.tmp
            .persist(&dest)
            .map_err(|e| Error::io(&dest, e.error))?;
        Ok(())
    }
}

/// Write `path` through `fill`; on any error the destination is left untouched and the
/// temporary file is removed.
pub fn write_atomically<F>(path: &Path, fill: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<&mut std::fs::File>) -> Result<()>,
{
    let mut file = AtomicFile::create(path)?;
    {
        let mut out = file.writer();
        fill(&mut out)?;
        out.flush().map_err(|e| Error::io(path, e))?;
    }
    file.commit()
}

/// The bytes of the file at `path`, gunzipped when they start with gzip's magic (traces are
/// often stored as `.json.gz`).
pub fn read_gunzipped(path: &Path) -> Result<Vec<u8>> {
    let io = |e| Error::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len() as usize;
    let mut raw = huge_page_buffer(size + 1);
    file.read_to_end(&mut raw).map_err(io)?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    // gzip's trailer holds the uncompressed size modulo 2^32: one allocation of the right size.
    let hint = raw
        .len()
        .checked_sub(4)
        .map(|at| u32::from_le_bytes(raw[at..].try_into().expect("4 bytes")) as usize)
        .filter(|n| *n >= raw.len())
        .unwrap_or(raw.len() * 8);
    let mut out = huge_page_buffer(hint + 1);
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .map_err(|e| Error::BadCpuTrace {
            file: path.to_path_buf(),
            reason: format!("cannot gunzip ({e})"),
        })?;
    Ok(out)
}

/// An empty buffer of `capacity` bytes whose memory the kernel may back with huge pages: a
/// trace is written once, front to back, and 4 KiB pages cost a fault each (a few % of a
/// Kineto import).
fn huge_page_buffer(capacity: usize) -> Vec<u8> {
    let buffer = Vec::with_capacity(capacity);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (buffer.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (buffer.as_ptr() as usize + capacity) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside the allocation we own; MADV_HUGEPAGE only changes
            // how the kernel backs it, never its contents. A refusal just leaves small pages.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    buffer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_no_file_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.csv");
        let res = write_atomically(&dest, |w| {
            w.write_all(b"partial").unwrap();
            Err(Error::Usage("boom".into()))
        });
        assert!(res.is_err());
        assert!(!dest.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_complete_write_replaces_the_destination() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.csv");
        std::fs::write(&dest, "old").unwrap();
        write_atomically(&dest, |w| {
            w.write_all(b"new").unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }
}
