//! Read a Kineto trace file: its bytes, gunzipped when they start with gzip's magic.

use std::io::Read;
use std::path::Path;

use crate::error::Error;
use crate::Result;

/// The bytes of the trace at `path`, decompressed when gzipped.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
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
/// trace is written once, front to back, and 4 KiB pages cost a fault each (a few % of an
/// import).
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
