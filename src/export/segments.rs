//! A Chrome document encoded in parallel. Each stretch of `traceEvents` (a part of the CPU
//! trace's events, one plan's events) is encoded on its own into an unnamed temporary file,
//! as many stretches at a time as there are cores, and the stretches are then joined in
//! document order. A gzipped document is one gzip member whose pieces are the stretches,
//! each compressed by the task that encoded it (raw deflate ending on a sync flush; see
//! [`crate::file::gzip`]), so compression runs in parallel too.

use std::fs::File;
use std::future::Future;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use datafusion::prelude::SessionContext;
use flate2::Compression;
use futures::StreamExt;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::file::gzip::{self, Block, Checksum, Piece};
use crate::sink::chrome::{ChromeWriter, Frame, Mark, Span};
use crate::Result;

/// Where stretches are encoded: unnamed files in `dir` (they vanish when dropped, so an
/// interrupted export leaves nothing), gzipped or not.
#[derive(Clone, Debug)]
pub(crate) struct SegmentSink {
    pub dir: PathBuf,
    pub gzip: bool,
    /// the window's renaming in a merged trace (None: events as they are)
    pub remap: Option<std::sync::Arc<crate::sink::chrome::Remap>>,
    /// mark every event for a split export ([`crate::export::split`]); gzipped stretches
    /// are then cut into blocks that inflate alone, which the split copies into its parts
    pub index: bool,
}

/// A segment (or anything) still to be computed.
pub(crate) type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Work that encodes stretches of the document, each with its place (slot) in it.
pub(crate) type Job<'a> = Pending<'a, Result<Vec<(usize, Vec<Segment>)>>>;

/// One encoded stretch of events.
pub(crate) struct Segment {
    pub file: File,
    /// the checksum of its bytes before compression (gzipped only)
    sum: Checksum,
    pub events: u64,
    pub span: Option<Span>,
    /// its bytes before compression
    pub bytes: u64,
    /// its events' marks, offsets in its bytes before compression (when the sink indexes,
    /// else empty)
    pub marks: Vec<Mark>,
    /// its blocks, in order, when the sink indexes and gzips (else empty): each ends where
    /// an event ends
    pub blocks: Vec<Block>,
}

impl SegmentSink {
    /// A writer of one stretch.
    pub fn writer(&self) -> Result<ChromeWriter<SegmentOut>> {
        let file = tempfile::tempfile_in(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let out = match (self.gzip, self.index) {
            (true, false) => SegmentOut::Gzip(Box::new(Piece::new(file, Compression::fast()))),
            (true, true) => SegmentOut::Blocks {
                piece: Box::new(Piece::new(file, Compression::fast())),
                blocks: Vec::new(),
            },
            (false, _) => SegmentOut::Plain(file),
        };
        Ok(ChromeWriter::segment(out)
            .with_remap(self.remap.clone())
            .with_index(self.index))
    }

    /// The stretch `writer` encoded.
    pub fn finish(&self, mut writer: ChromeWriter<SegmentOut>) -> Result<Segment> {
        let (events, span, bytes) = (writer.events(), writer.span(), writer.bytes());
        let marks = writer.take_marks();
        let (file, sum, blocks) = match writer.finish_segment()? {
            SegmentOut::Plain(file) => (file, Checksum::default(), Vec::new()),
            SegmentOut::Gzip(piece) => {
                let (file, sum) = piece.finish().map_err(Error::Write)?;
                (file, sum, Vec::new())
            }
            SegmentOut::Blocks { piece, blocks } => {
                let (file, sum) = piece.finish().map_err(Error::Write)?;
                (file, sum, blocks)
            }
        };
        Ok(Segment {
            file,
            sum,
            events,
            span,
            bytes,
            marks,
            blocks,
        })
    }

    /// `bytes` as a piece of the document (compressed apart when gzipped), with its checksum.
    fn piece(&self, bytes: &[u8]) -> (Vec<u8>, Checksum) {
        if !self.gzip {
            return (bytes.to_vec(), Checksum::default());
        }
        gzip::piece_of(bytes, Compression::fast())
    }

    /// The non-empty `segments` joined in order into one (a merged trace's window).
    pub fn concat(&self, segments: Vec<Segment>) -> Result<Segment> {
        let mut file = tempfile::tempfile_in(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let io = |e| Error::io(&self.dir, e);
        let (mut sum, mut events, mut span) = (Checksum::default(), 0, None);
        let (mut bytes, mut marks, mut blocks) = (0, Vec::new(), Vec::new());
        // where the next compressed byte goes
        let mut z = 0;
        for mut segment in segments.into_iter().filter(|s| s.events > 0) {
            if events > 0 {
                // a piece of its own, so a block of its own too
                let (comma, comma_sum) = self.piece(Frame::SEPARATOR);
                file.write_all(&comma).map_err(io)?;
                sum.then(&comma_sum);
                let (raw, zs) = (bytes..bytes + 1, z..z + comma.len() as u64);
                if self.gzip && self.index {
                    blocks.push(Block {
                        raw,
                        z: zs,
                        sum: comma_sum,
                    });
                }
                bytes += Frame::SEPARATOR.len() as u64;
                z += comma.len() as u64;
            }
            let at = bytes;
            marks.extend(segment.marks.iter().map(|m| Mark {
                start: at + m.start,
                ..*m
            }));
            blocks.extend(segment.blocks.into_iter().map(|b| Block {
                raw: at + b.raw.start..at + b.raw.end,
                z: z + b.z.start..z + b.z.end,
                sum: b.sum,
            }));
            bytes += segment.bytes;
            segment.file.seek(SeekFrom::Start(0)).map_err(io)?;
            z += std::io::copy(&mut segment.file, &mut file).map_err(io)?;
            sum.then(&segment.sum);
            events += segment.events;
            span = Span::merge(span, segment.span);
        }
        Ok(Segment {
            file,
            sum,
            events,
            span,
            bytes,
            marks,
            blocks,
        })
    }

    /// Write the document: the non-empty `segments` in order in `frame` (the sink's bytes:
    /// its head, its separator between two segments, its tail); gzipped, as one member.
    /// Segments are copied file to file, which the kernel does without passing the bytes
    /// through user space.
    pub fn join(
        &self,
        out: &mut File,
        frame: &Frame,
        segments: Vec<Segment>,
        output: &std::path::Path,
    ) -> Result<()> {
        let io = |e| Error::io(output, e);
        if self.gzip {
            out.write_all(&gzip::HEADER).map_err(io)?;
        }
        let (head, mut sum) = self.piece(frame.head());
        out.write_all(&head).map_err(io)?;
        let (comma, comma_sum) = self.piece(Frame::SEPARATOR);
        let mut first = true;
        for mut segment in segments.into_iter().filter(|s| s.events > 0) {
            if !first {
                out.write_all(&comma).map_err(io)?;
                sum.then(&comma_sum);
            }
            first = false;
            segment.file.seek(SeekFrom::Start(0)).map_err(io)?;
            std::io::copy(&mut segment.file, out).map_err(io)?;
            sum.then(&segment.sum);
        }
        let (tail, tail_sum) = self.piece(frame.tail());
        out.write_all(&tail).map_err(io)?;
        if self.gzip {
            sum.then(&tail_sum);
            out.write_all(&gzip::trailer(&sum)).map_err(io)?;
        }
        Ok(())
    }
}

/// A stretch's file, plain or behind its gzip piece's compressor.
pub(crate) enum SegmentOut {
    Plain(File),
    Gzip(Box<Piece<File>>),
    /// gzipped, each write a block of its own: the writer writes whole events at a time
    Blocks {
        piece: Box<Piece<File>>,
        blocks: Vec<Block>,
    },
}

impl Write for SegmentOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            SegmentOut::Plain(f) => f.write(buf),
            SegmentOut::Gzip(g) => g.write(buf),
            SegmentOut::Blocks { piece, blocks } => {
                piece.write_all(buf)?;
                blocks.push(piece.end_block()?);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            SegmentOut::Plain(f) => f.flush(),
            SegmentOut::Gzip(g) | SegmentOut::Blocks { piece: g, .. } => g.flush(),
        }
    }
}

/// The segments of one export plan's events: one per partition of the plan, in partition
/// order. Each partition's rows come in a fixed order; encoding them apart (in parallel) and
/// joining the pieces in partition order keeps the document the same from run to run, where
/// one merged stream would interleave the partitions as they happen to run.
pub(crate) async fn plan_segments(
    ctx: SessionContext,
    plan: &'static str,
    sink: SegmentSink,
) -> Result<Vec<Segment>> {
    let started = crate::profile::Clock::start();
    crate::profile::explain(plan, async || Ok(ctx.table(plan).await?)).await?;
    let streams = ctx.table(plan).await?.execute_stream_partitioned().await?;
    let partitions = streams.into_iter().map(|mut stream| {
        let sink = sink.clone();
        AbortOnDrop(tokio::spawn(async move {
            let mut writer = sink.writer()?;
            while let Some(batch) = stream.next().await {
                writer.write(&batch?)?;
            }
            sink.finish(writer)
        }))
    });
    let segments = futures::future::try_join_all(partitions).await?;
    started.report(plan);
    Ok(segments)
}

/// Run `jobs`, as many at a time as there are cores; each gives stretches with their place
/// in the document. The stretches, in document order.
pub(crate) async fn encode_all<'a>(jobs: Vec<Job<'a>>) -> Result<Vec<Segment>> {
    let parallel = match crate::profile::settings().plan_jobs {
        Some(jobs) => jobs.max(1),
        None => crate::threads::cores(),
    };
    // Unordered, so a long job does not hold back the start of the ones after it.
    let mut running = futures::stream::iter(jobs).buffer_unordered(parallel);
    let mut placed = Vec::new();
    while let Some(stretches) = running.next().await {
        placed.extend(stretches?);
    }
    placed.sort_by_key(|(slot, _)| *slot);
    Ok(placed
        .into_iter()
        .flat_map(|(_, segments)| segments)
        .collect())
}

/// A plan's segments encoded on a task of its own (another core), cancelled when dropped.
pub(crate) fn spawned(
    ctx: &SessionContext,
    plan: &'static str,
    sink: &SegmentSink,
) -> Pending<'static, Result<Vec<Segment>>> {
    let (ctx, sink) = (ctx.clone(), sink.clone());
    Box::pin(async move { AbortOnDrop(tokio::spawn(plan_segments(ctx, plan, sink))).await })
}

/// A task handle that aborts its task when dropped: an export that fails or is cancelled
/// stops the plans it started.
struct AbortOnDrop<T>(JoinHandle<Result<T>>);

impl<T> Future for AbortOnDrop<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|joined| {
            joined.unwrap_or_else(|e| Err(Error::Internal(format!("export task: {e}"))))
        })
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
