//! The critical path's slices of a .pftrace (`export --critical-path`): the
//! `critical_path_segment` table on a track of its own.

use datafusion::prelude::SessionContext;

use super::collect;
use super::columns::{int, ints, text, texts};
use super::slices::{write_begins, write_ends, Annotations, CriticalNotes, SliceRow};
use super::tracks::{Id, Tracks};
use crate::sink::perfetto::{Interned, Names, PacketRemap, Packets};
use crate::Result;

/// The critical path's segments (`export --critical-path`), on a "Critical path" process
/// with a thread per step, in path order (category critical_path), one after another
/// (written by [`write_in_turn`]); None when there are none. The reference's .pftrace draws
/// GPU ops as render stages, which flows cannot join, so here the path is this track alone
/// (the Chrome export also draws its arrows).
pub(super) async fn critical_path_slices<'a>(
    ctx: &SessionContext,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Result<Option<Vec<SliceRow<'a>>>> {
    let segments = collect(
        ctx,
        "SELECT * FROM critical_path_segment ORDER BY step, position",
    )
    .await?;
    if !segments.iter().any(|b| b.num_rows() > 0) {
        return Ok(None);
    }
    let process = Id::Text("Critical path".into());
    let category_iid = names.category("critical_path", &mut interned.categories);
    let mut rows = Vec::new();
    for batch in &segments {
        let (steps, step_names) = (ints(batch, "step")?, texts(batch, "step_name")?);
        let (positions, durs) = (ints(batch, "position")?, ints(batch, "dur_ns")?);
        let (kinds, causes, ops) = (
            texts(batch, "type")?,
            texts(batch, "bound_by")?,
            texts(batch, "name")?,
        );
        let (start, end) = (ints(batch, "draw_ts")?, ints(batch, "draw_end")?);
        for i in 0..batch.num_rows() {
            let step_name = text(&step_names, i).unwrap_or_default();
            let uuid = tracks.thread(
                &process,
                &Id::Text(step_name.to_string()),
                "Critical path",
                step_name,
            );
            let kind = text(&kinds, i).unwrap_or_default();
            rows.push(SliceRow {
                ts: int(&start, i),
                end: int(&end, i),
                uuid,
                name_iid: names.event(text(&ops, i).unwrap_or(kind), &mut interned.event_names),
                category_iid,
                annotations: Annotations::Critical(Box::new(CriticalNotes {
                    step: int(&steps, i),
                    position: int(&positions, i),
                    dur_ns: int(&durs, i),
                    kind: kind.to_string(),
                    bound_by: text(&causes, i).map(str::to_string),
                })),
                json: None,
                gpu_correlation: Vec::new(),
            });
        }
    }
    Ok(Some(rows))
}

/// The packets of `group`, slices one after another (each BEGIN then its END): for slices
/// that follow each other on a track, where one ends when the next begins (Perfetto keeps
/// the packets of one time in file order, and an END closes the track's newest slice).
pub(super) fn write_in_turn(
    w: &mut impl Packets,
    group: &[SliceRow],
    interned: &Interned,
    remap: &PacketRemap,
) -> std::io::Result<()> {
    for row in group.chunks(1) {
        write_begins(w, row, interned, remap)?;
        write_ends(w, row, remap)?;
    }
    Ok(())
}
