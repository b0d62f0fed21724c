//! Helpers shared by the tests: build writers of the bundled example
//! programs natively, with the C compiler the machine has.

#![allow(dead_code)]

use retrace_lbr::runtime;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled example programs' sources.
pub fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/src")
}

/// Whether missing tools must fail the test (CI) rather than skip it.
pub fn require_tools() -> bool {
    std::env::var_os("RETRACE_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// `tool` if it runs; otherwise None after printing why (or a panic
/// when tools are required).
pub fn tool(tool: &str) -> Option<String> {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(tool.to_string());
    }
    assert!(
        !require_tools(),
        "{tool} is required (RETRACE_REQUIRE_TOOLS=1) but does not run"
    );
    eprintln!("skipping: {tool} is not installed");
    None
}

/// A C compiler for x86-64 writers (`CC`, else gcc), or None (skip).
pub fn cc() -> Option<String> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("skipping: software branch records are built for x86-64 Linux");
        return None;
    }
    tool(&std::env::var("CC").unwrap_or_else(|_| "gcc".into()))
}

/// Build `sources` with `flags` into `dir/name` as a writer (coverage
/// flag added, runtime linked), as `retrace lbr cc` does.
pub fn writer(cc: &str, dir: &Path, name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    let rt = runtime::compile(cc.as_ref(), dir).expect("the runtime compiles");
    let out = dir.join(name);
    let mut command: Vec<std::ffi::OsString> = vec![cc.into()];
    command.extend(flags.iter().map(Into::into));
    command.push("-I".into());
    command.push(programs().into());
    command.extend(sources.iter().map(|s| s.clone().into_os_string()));
    command.push("-o".into());
    command.push(out.clone().into_os_string());
    let status = runtime::writer_command(&command, &rt)
        .unwrap()
        .status()
        .unwrap();
    assert!(status.success(), "building writer {name}");
    out
}

/// Build an example program as a writer at -O2 with line tables.
pub fn example_writer(cc: &str, dir: &Path, program: &str) -> PathBuf {
    writer(
        cc,
        dir,
        program,
        &[programs().join(format!("{program}.c"))],
        &["-O2", "-g"],
    )
}

/// Build the stress driver (not instrumented; it calls the runtime itself).
pub fn stress_driver(cc: &str, dir: &Path) -> PathBuf {
    let rt = runtime::compile(cc.as_ref(), dir).expect("the runtime compiles");
    let out = dir.join("stress");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stress.c");
    let status = Command::new(cc)
        .args(["-O2", "-fno-ipa-icf"])
        .arg(&src)
        .arg(&rt)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "building the stress driver");
    out
}
