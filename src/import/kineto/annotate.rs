//! `gpu_user_annotation` spans to user external ids. Kineto draws a named region's GPU span
//! over the GPU ops the region launched, per device and stream; the window keeps the link
//! instead (`external_correlation.user_external_id` -> `user_annotation`), and the exporter
//! redraws the span from it. Each GPU op goes to the innermost span around it on its device
//! and stream.

use super::map::{Op, Span};

/// A `gpu_user_annotation` event.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub device: i64,
    pub stream: i64,
    pub span: Span,
    pub id: i64,
}

/// (correlation id, region id) for every op inside a region, in op order.
pub fn link(mut regions: Vec<Region>, ops: &[Op]) -> Vec<(i64, i64)> {
    // Per lane by start; of two spans starting together the longer first, so scanning
    // backwards from an op meets the innermost enclosing span first.
    regions.sort_by_key(|r| {
        (
            r.device,
            r.stream,
            r.span.start,
            std::cmp::Reverse(r.span.end),
        )
    });
    let mut links = Vec::new();
    for op in ops {
        let (Some(device), Some(stream)) = (op.device, op.stream) else {
            continue;
        };
        if op.correlation == 0 {
            continue;
        }
        let lane_end = regions.partition_point(|r| {
            (r.device, r.stream, r.span.start) <= (device, stream, op.span.start)
        });
        let found = regions[..lane_end]
            .iter()
            .rev()
            .take_while(|r| (r.device, r.stream) == (device, stream))
            .find(|r| r.span.end >= op.span.end);
        if let Some(region) = found {
            links.push((op.correlation, region.id));
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(stream: i64, start: i64, end: i64, correlation: i64) -> Op {
        Op {
            device: Some(0),
            stream: Some(stream),
            span: Span { start, end },
            correlation,
        }
    }

    fn region(stream: i64, start: i64, end: i64, id: i64) -> Region {
        Region {
            device: 0,
            stream,
            span: Span { start, end },
            id,
        }
    }

    #[test]
    fn ops_link_to_the_innermost_region_on_their_stream() {
        let regions = vec![
            region(7, 0, 1000, 1),
            region(7, 100, 200, 2),
            region(8, 0, 1000, 3),
        ];
        let ops = [
            op(7, 150, 160, 10),  // inside 1 and 2: 2
            op(7, 300, 400, 11),  // inside 1 only
            op(8, 5, 6, 12),      // other stream
            op(9, 5, 6, 13),      // no region
            op(7, 900, 1100, 14), // sticks out
        ];
        assert_eq!(link(regions, &ops), vec![(10, 2), (11, 1), (12, 3)]);
    }
}
