//! Stage `file`: inputs are read whole (gunzipped as needed); outputs appear whole or not at
//! all. Data goes to a temporary file in the destination's directory and is renamed over the
//! destination only once complete. A gzipped output written in parallel is still one gzip
//! member ([`gzip`]). The temporary files and folders of outputs being written are listed
//! ([`Unfinished`]), so that a command interrupted by Ctrl-C removes them before it exits
//! ([`abandon_unfinished`]).

pub mod gzip;

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::Error;
use crate::Result;

/// The temporary paths of the outputs being written now.
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it as valid as before.
    UNFINISHED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file or folder of an output being written, listed while it lives. Its owner
/// removes it on failure and renames it into place with [`Unfinished::finish`].
pub struct Unfinished(PathBuf);

impl Unfinished {
    /// Make a temporary file or folder with `make` and list the path `path_of` gives, under
    /// the list's lock: a Ctrl-C finds it listed as soon as it exists.
    pub fn make<T>(
        make: impl FnOnce() -> Result<T>,
        path_of: impl FnOnce(&T) -> PathBuf,
    ) -> Result<(T, Unfinished)> {
        let mut list = unfinished();
        let made = make()?;
        let path = path_of(&made);
        list.push(path.clone());
        Ok((made, Unfinished(path)))
    }

    /// Run `rename` (the temporary path into place) with the list held, so that a Ctrl-C
    /// meanwhile finds the output either whole in place or not at all.
    pub fn finish<T>(self, rename: impl FnOnce() -> T) -> T {
        let mut list = unfinished();
        list.retain(|p| *p != self.0);
        rename()
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        unfinished().retain(|p| *p != self.0);
    }
}

/// Remove the temporary file or folder of every output still being written, and keep any
/// from being renamed into place after: for a process about to exit on Ctrl-C. The list
/// stays locked for the rest of the process's life.
pub fn abandon_unfinished() {
    let list = unfinished();
    for path in list.iter() {
        let _ = match path.is_dir() {
            true => std::fs::remove_dir_all(path),
            false => std::fs::remove_file(path),
        };
    }
    std::mem::forget(list);
}

/// A file being written: data goes to a temporary file beside the destination, which
/// [`AtomicFile::commit`] renames over it. Dropped uncommitted, it leaves nothing behind.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
    listed: Unfinished,
}

/// The folder a file at `path` is written in: its parent, `.` for a bare name.
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

impl AtomicFile {
    pub fn create(dest: &Path) -> Result<Self> {
        let dir = folder_of(dest);
        let (tmp, listed) = Unfinished::make(
            || {
                (tempfile::Builder::new().prefix(".tracesql-").suffix(".tmp"))
                    .tempfile_in(dir)
                    .map_err(|e| Error::io(dir, e))
            },
            |tmp| tmp.path().to_path_buf(),
        )?;
        // Temporary files are private (0600); the finished output is an ordinary file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let readable = std::fs::Permissions::from_mode(0o644);
            std::fs::set_permissions(tmp.path(), readable).map_err(|e| Error::io(dir, e))?;
        }
        Ok(AtomicFile {
            listed,
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
        let (tmp, dest) = (self.tmp, self.dest);
        (self.listed)
            .finish(|| tmp.persist(&dest))
            .map_err(|e| Error::io(&dest, e.error))?;
        Ok(())
    }
}

/// A writer that keeps the first I/O error its inner writer gave, for encoders that turn
/// such errors into their own (arrow's CSV writer keeps only the text): the failure is then
/// still reported as the file's, with its kind.
pub struct WatchedWriter<W: Write> {
    inner: W,
    failed: Option<(std::io::ErrorKind, String)>,
}

impl<W: Write> WatchedWriter<W> {
    pub fn new(inner: W) -> Self {
        WatchedWriter {
            inner,
            failed: None,
        }
    }

    /// The first write error, as an error on `path`.
    pub fn error_at(&self, path: &Path) -> Option<Error> {
        let (kind, text) = self.failed.as_ref()?;
        Some(Error::io(path, std::io::Error::new(*kind, text.clone())))
    }

    fn watch<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            self.failed.get_or_insert_with(|| (e.kind(), e.to_string()));
        }
        result
    }
}

impl<W: Write> Write for WatchedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.watch(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.watch(result)
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

/// Refuse to write `output` when it is, or lies inside, one of `inputs` (a window, an
/// archive, a script), after resolving symlinks and `..`: a command must never replace what
/// it reads. `what` names the output in the message (`--output`).
pub fn refuse_writing_into(output: &Path, inputs: &[&Path], what: &str) -> Result<()> {
    let target = resolve(output);
    for input in inputs {
        let input_path = resolve(input);
        if target == input_path || target.starts_with(&input_path) {
            let relation = if target == input_path {
                "is"
            } else {
                "lies inside"
            };
            return Err(Error::Usage(format!(
                "{}: {what} {relation} the input {}; choose an output outside it",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// `path` made absolute with symlinks and `..` resolved, as far as it exists; the part that
/// does not exist yet is appended as written (with `.` and `..` applied).
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut resolved = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            // The prefix is canonical (or does not exist), so its parent is one step up.
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            other => {
                resolved.push(other);
                if let Ok(real) = resolved.canonicalize() {
                    resolved = real;
                }
            }
        }
    }
    resolved
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
    fn outputs_in_or_at_an_input_are_refused_through_symlinks_and_dots() {
        let dir = tempfile::tempdir().unwrap();
        let window = dir.path().join("w");
        std::fs::create_dir(&window).unwrap();
        std::fs::write(window.join("kernel.parquet"), "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&window, &link).unwrap();
        let refused = [
            window.join("kernel.parquet"),
            window.clone(),
            window.join("new/trace.json"),
            link.join("kernel.parquet"),
            dir.path().join("other/../w/t.json"),
            window.join("./sub/../t.json"),
        ];
        for output in &refused {
            let err = refuse_writing_into(output, &[&window], "--output").unwrap_err();
            assert!(
                err.to_string().contains("choose an output outside it"),
                "{err}"
            );
        }
        let allowed = [dir.path().join("w.json"), dir.path().join("w2/t.json")];
        for output in &allowed {
            refuse_writing_into(output, &[&window], "--output").unwrap();
        }
        // An input given through the symlink guards its target too.
        assert!(refuse_writing_into(&window.join("t.json"), &[&link], "--output").is_err());
    }

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
