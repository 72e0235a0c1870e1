//! Link the binary as a fixed-address (non-PIE) executable. A PIE binary of this size has
//! ~200k pointers the loader must relocate at every start, which touches ~10 MB of pages
//! before `main`; fixed addresses leave them on disk until used (faster start, lower RSS).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
