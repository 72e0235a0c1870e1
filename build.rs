//! Build steps:
//! - Link the binary as a fixed-address (non-PIE) executable. A PIE binary of this size has
//!   ~200k pointers the loader must relocate at every start, which touches ~10 MB of pages
//!   before `main`; fixed addresses leave them on disk until used (faster start, lower RSS).
//! - List the export plans (`sql/export/*.sql`) in dependency order, so that adding a plan
//!   is adding its file: `src/sql.rs` includes the list as `EXPORT`.

use std::collections::BTreeMap;
use std::path::Path;

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=sql/export");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("export_objects.rs");
    std::fs::write(out, export_objects(Path::new("sql/export"))).unwrap();
}

/// The `SqlObject`s of the `.sql` files in `dir`, each after the objects it reads (a name
/// read outside comments), in name order where that leaves a choice.
fn export_objects(dir: &Path) -> String {
    let mut texts = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sql") {
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            texts.insert(name, code_of(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    let reads = |name: &str| -> Vec<&String> {
        (texts.keys())
            .filter(|other| *other != name && mentions(&texts[name], other))
            .collect()
    };
    let mut placed: Vec<&String> = Vec::new();
    while placed.len() < texts.len() {
        let next = (texts.keys())
            .find(|n| !placed.contains(n) && reads(n).iter().all(|r| placed.contains(r)))
            .unwrap_or_else(|| panic!("sql/export: the plans read each other in a cycle"));
        placed.push(next);
    }
    let mut list = String::from("&[\n");
    for name in placed {
        list += &format!(
            "    SqlObject {{ name: {name:?}, path: \"export/{name}.sql\", \
             text: include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/sql/export/{name}.sql\")) }},\n"
        );
    }
    list + "]\n"
}

/// `text` without its `--` comments.
fn code_of(text: &str) -> String {
    (text.lines())
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` contains `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
        let after = text[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word(c));
        before && after
    })
}
