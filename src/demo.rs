//! The built-in demo window: a small synthetic window generated once into the user's cache
//! directory, so `tracesql query` answers something on a fresh machine with no arguments.

use std::path::PathBuf;

use crate::error::Error;
use crate::synth::{write_window, SynthConfig};
use crate::Result;

/// Events in the demo window.
pub const DEMO_EVENTS: u64 = 5_000;
/// Seed of the demo window.
pub const DEMO_SEED: u64 = 1;

/// The demo window's directory, generated on first use.
pub fn demo_window() -> Result<PathBuf> {
    let dir = cache_dir().join(format!(
        "demo-v{}-{}-{DEMO_EVENTS}-{DEMO_SEED}",
        crate::schema::SCHEMA_VERSION,
        env!("CARGO_PKG_VERSION")
    ));
    if dir.join("window_info.parquet").exists() {
        return Ok(dir);
    }
    let parent = dir.parent().expect("the demo dir has a parent");
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let config = SynthConfig::new(DEMO_EVENTS, DEMO_SEED);
    match write_window(&config, &dir) {
        Ok(_) => Ok(dir),
        // Another process may have generated it at the same time.
        Err(_) if dir.join("window_info.parquet").exists() => Ok(dir),
        Err(e) => Err(e),
    }
}

/// `$TRACESQL_CACHE_DIR`, else `$XDG_CACHE_HOME/tracesql`, else `~/.cache/tracesql`.
fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACESQL_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("tracesql");
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache").join("tracesql")
}
