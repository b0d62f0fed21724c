//! Progress on a terminal: `retrace record` shows a spinner and `retrace
//! estimate` a bar over the trace when standard error is a terminal (a
//! pseudo-terminal from util-linux's `script`), and nothing at all when
//! it is a pipe — the report is then all there is.

mod common;
use common::succeeded;

use std::path::PathBuf;
use std::process::Command;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `args` run by retrace under a pseudo-terminal, progress shown at once:
/// everything it wrote to the terminal.
fn on_a_terminal(args: &[&str]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to make a terminal");
        return None;
    }
    let line = std::iter::once(env!("CARGO_BIN_EXE_retrace"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("RETRACE_PROGRESS_DELAY_MS", "0")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn progress_shows_on_a_terminal_and_never_in_a_pipe() {
    let dir = scratch();
    let trace = dir.join("sort.rtrace");
    let trace = trace.to_str().unwrap();
    let elf = "programs/bin/sort-rv32-O2.elf";
    let record = ["record", elf, "-o", trace];
    let estimate = [
        "estimate", elf, trace, "--core", "rocket", "--core", "picorv32",
    ];
    if let Some(shown) = on_a_terminal(&record) {
        assert!(shown.contains("recording"), "{shown}");
        let shown = on_a_terminal(&estimate).unwrap();
        assert!(shown.contains("replaying ["), "{shown}");
        assert!(shown.contains("KiB"), "{shown}");
    }
    // Piped, with the same zero delay: stderr holds only the reports.
    for args in [&record[..], &estimate[..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_retrace"))
            .args(args)
            .env("RETRACE_PROGRESS_DELAY_MS", "0")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("recording (") && !err.contains("replaying"),
            "{err}"
        );
        assert!(!err.contains('\u{1b}'), "escape codes in a pipe: {err:?}");
        succeeded(&out);
    }
}
