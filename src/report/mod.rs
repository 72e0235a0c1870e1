//! Stage `report`: canned analyses (`sql/reports/*.sql`) rendered for people. `html` writes
//! one self-contained page (tables and inline SVG plots, no script, nothing fetched).

mod columns;
mod output;
mod plots;
pub use output::ReportOutput;
pub mod html;
#[cfg(test)]
mod sample;
pub mod svg;
