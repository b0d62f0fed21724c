//! End-to-end tests of `retrace lbr …`: a writer built by `lbr cc` from a
//! bundled example program, recorded, converted; and every kind of bad
//! input refused with one line and status 125.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .output()
        .expect("runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-lbr-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// gcc, or None (skip) unless tools are required.
fn gcc() -> Option<()> {
    let ok = Command::new("gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("RETRACE_REQUIRE_TOOLS").is_none_or(|v| v != "1"),
            "gcc is required (RETRACE_REQUIRE_TOOLS=1)"
        );
        eprintln!("skipping: gcc is not installed");
        return None;
    }
    cfg!(all(target_arch = "x86_64", target_os = "linux")).then_some(())
}

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/src")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// One line on stderr, naming the problem, status 125.
/// `retrace lbr cc -- gcc -O2 -g` of the example crc32.c into `writer`.
fn build_crc32_writer(writer: &Path) -> Output {
    let inc = programs();
    let src = inc.join("crc32.c");
    retrace(&[
        "lbr",
        "cc",
        "--",
        "gcc",
        "-O2",
        "-g",
        "-I",
        s(&inc),
        s(&src),
        "-o",
        s(writer),
    ])
}

/// `out`, which must be a success (its stderr otherwise).
fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `retrace lbr record --writer W -o LBR --exact REST…`, which must succeed.
fn record_exact(writer: &Path, lbr: &Path, rest: &[&str]) -> Output {
    let mut args = vec![
        "lbr",
        "record",
        "--writer",
        s(writer),
        "-o",
        s(lbr),
        "--exact",
    ];
    args.extend_from_slice(rest);
    ok(retrace(&args))
}

fn assert_refused(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(needle), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn cc_trace_cmp_decides_the_paths_of_switches() {
    if gcc().is_none() {
        return;
    }
    let dir = scratch("trace-cmp");
    let writer = dir.join("exprparse.writer");
    let inc = programs();
    let src = inc.join("exprparse.c");
    ok(retrace(&[
        "lbr",
        "cc",
        "--trace-cmp",
        "--",
        "gcc",
        "-O2",
        "-g",
        "-I",
        s(&inc),
        s(&src),
        "-o",
        s(&writer),
    ]));
    let lbr = dir.join("exprparse.lbr");
    let out = record_exact(&writer, &lbr, &["--format", "json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["writer_pairs"], v["reader_pairs"]);
    assert_eq!(v["writer_values"], v["reader_values"]);
    assert!(v["reader_values"].as_u64().unwrap() > 0, "{stdout}");
    let out = ok(retrace(&["lbr", "convert", s(&lbr), "--format", "json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["conversion"];
    assert_eq!(c["unresolved"], 0);
    // Without --trace-cmp, 1.4% of exprparse's pair occurrences are
    // ambiguous (its dispatches); with it, two of two million.
    assert!(
        c["ambiguous"].as_u64().unwrap() * 10_000 < c["occurrences"].as_u64().unwrap(),
        "{c}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cc_record_convert_end_to_end() {
    if gcc().is_none() {
        return;
    }
    let dir = scratch("e2e");
    let writer = dir.join("crc32.writer");
    ok(build_crc32_writer(&writer));
    let lbr = dir.join("crc32.lbr");
    let out = record_exact(&writer, &lbr, &["--format", "json", "--", "1024", "4"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["writer_pairs"], v["reader_pairs"]);
    assert!(v["writer_finished"].as_bool().unwrap());
    let out = retrace(&["lbr", "convert", s(&lbr), "--format", "json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["conversion"]["unresolved"], 0);
    assert!(v["branches"].as_array().unwrap().len() > 5);
    let out = retrace(&["lbr", "convert", s(&lbr), "--format", "perfscript"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("PERF_RECORD_MMAP2 "));
}

#[test]
fn bad_input_is_refused_in_one_line() {
    if gcc().is_none() {
        return;
    }
    let dir = scratch("bad");
    let plain = dir.join("plain");
    let src = programs().join("crc32.c");
    let inc = programs();
    assert!(Command::new("gcc")
        .args(["-O2", "-I", s(&inc), s(&src), "-o", s(&plain)])
        .status()
        .unwrap()
        .success());
    let lbr = dir.join("x.lbr");
    // A program built without the runtime.
    let out = retrace(&[
        "lbr",
        "record",
        "--writer",
        s(&plain),
        "-o",
        s(&lbr),
        "--exact",
    ]);
    assert_refused(&out, "has no retrace lbr runtime");
    // Not an executable at all.
    let text = dir.join("notes.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let out = retrace(&[
        "lbr",
        "record",
        "--writer",
        s(&text),
        "-o",
        s(&lbr),
        "--exact",
    ]);
    assert_refused(&out, "is not an ELF executable");
    // A file of another kind given as a recording.
    let out = retrace(&["lbr", "convert", s(&text)]);
    assert_refused(&out, "is not a retrace lbr recording");
    // A truncated recording.
    let writer = dir.join("crc32.writer");
    ok(build_crc32_writer(&writer));
    record_exact(&writer, &lbr, &["--", "64", "1"]);
    let whole = std::fs::read(&lbr).unwrap();
    let cut = dir.join("cut.lbr");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let out = retrace(&["lbr", "convert", s(&cut)]);
    assert_refused(&out, "damaged or truncated");
    // The recording converted against another binary.
    let out = retrace(&["lbr", "convert", s(&lbr), "--binary", s(&plain)]);
    assert_refused(&out, "is not the binary this recording was made with");
    // A missing writer.
    let out = retrace(&["lbr", "record", "--writer", "/nonexistent/w", "-o", s(&lbr)]);
    assert_refused(&out, "/nonexistent/w");
    // A compiler command that fails.
    let out = retrace(&["lbr", "cc", "--", "gcc", "/nonexistent.c", "-o", s(&writer)]);
    assert_eq!(out.status.code(), Some(125));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cc_emit_relocs_and_bolt_format() {
    if gcc().is_none() {
        return;
    }
    let dir = scratch("bolt");
    let inc = programs();
    let src = inc.join("crc32.c");
    let writer = dir.join("crc32.writer");
    ok(retrace(&[
        "lbr",
        "cc",
        "--emit-relocs",
        "--",
        "gcc",
        "-O2",
        "-I",
        s(&inc),
        s(&src),
        "-o",
        s(&writer),
    ]));
    // The executable keeps the relocations of its code (BOLT needs them).
    let bytes = std::fs::read(&writer).unwrap();
    assert!(bytes.windows(10).any(|w| w == b".rela.text"));
    let lbr = dir.join("crc32.lbr");
    record_exact(&writer, &lbr, &["--", "256", "2"]);
    let preagg = dir.join("crc32.preagg");
    ok(retrace(&[
        "lbr",
        "convert",
        s(&lbr),
        "--format",
        "bolt",
        "-o",
        s(&preagg),
    ]));
    let text = std::fs::read_to_string(&preagg).unwrap();
    let (mut b, mut f) = (0, 0);
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let hex = |x: &str| u64::from_str_radix(x, 16).is_ok();
        match fields[..] {
            ["B", from, to, n, "0"] if hex(from) && hex(to) && n.parse::<u64>().is_ok() => b += 1,
            ["F", from, to, n] if hex(from) && hex(to) && n.parse::<u64>().is_ok() => f += 1,
            _ => panic!("not a pre-aggregated line: {line:?}"),
        }
    }
    assert!(b > 5 && f > 5, "{b} B lines, {f} F lines");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gcc -O2 [-g]` of the example `program` into `out`, without coverage:
/// an analysed program.
fn build_plain(program: &str, debug: bool, out: &Path) {
    let inc = programs();
    let src = inc.join(format!("{program}.c"));
    let mut cmd = Command::new("gcc");
    cmd.arg("-O2");
    if debug {
        cmd.arg("-g");
    }
    assert!(cmd
        .args(["-I", s(&inc), s(&src), "-o", s(out)])
        .status()
        .unwrap()
        .success());
}

#[test]
fn analysed_program_named_at_record_or_convert_time() {
    if gcc().is_none() {
        return;
    }
    let dir = scratch("analysed");
    let writer = dir.join("crc32.writer");
    ok(build_crc32_writer(&writer));
    let plain = dir.join("crc32");
    build_plain("crc32", true, &plain);
    let lbr = dir.join("crc32.lbr");
    record_exact(&writer, &lbr, &["--analysed", s(&plain), "--", "1024", "4"]);
    // The recording names the analysed program: its addresses come out,
    // with how the writer's branches mapped (stderr and JSON).
    let out = ok(retrace(&["lbr", "convert", s(&lbr), "--format", "json"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mapped onto the analysed binary"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["analysed"]["mapping"]["all"];
    let (unique, total) = (
        m["unique"].as_u64().unwrap(),
        m["unique"].as_u64().unwrap()
            + m["ambiguous"].as_u64().unwrap()
            + m["unmapped"].as_u64().unwrap(),
    );
    assert!(
        unique * 2 > total,
        "most branch executions map uniquely: {m}"
    );
    // Every branch address is an address of the analysed program: the
    // writer has other code at most of them, so compare with its objdump.
    let dump = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", s(&plain)])
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    let branches = v["branches"].as_array().unwrap();
    assert!(branches.len() > 5);
    for b in branches {
        let addr = b["addr"].as_str().unwrap().trim_start_matches("0x");
        let line = dump
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{addr}:")))
            .unwrap_or_else(|| panic!("{addr} is an instruction of {}", plain.display()));
        assert!(
            line.contains("\tj") || line.contains("call") || line.contains("ret"),
            "{line}"
        );
    }
    let out = ok(retrace(&[
        "lbr",
        "convert",
        s(&lbr),
        "--format",
        "perfscript",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("PERF_RECORD_MMAP2 ") && first.ends_with("/crc32"),
        "{first}"
    );
    // The writer's own branches, on request.
    let out = ok(retrace(&[
        "lbr",
        "convert",
        s(&lbr),
        "--writer-only",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("analysed").is_none());
    // Named at convert time instead.
    let plain_lbr = dir.join("plain.lbr");
    record_exact(&writer, &plain_lbr, &["--", "64", "1"]);
    let out = ok(retrace(&[
        "lbr",
        "convert",
        s(&plain_lbr),
        "--analysed",
        s(&plain),
        "--format",
        "bolt",
    ]));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("B "));

    // Bad analysed programs, each refused in one line.
    let nodebug = dir.join("crc32.nodebug");
    build_plain("crc32", false, &nodebug);
    let out = retrace(&[
        "lbr",
        "record",
        "--writer",
        s(&writer),
        "--analysed",
        s(&nodebug),
        "-o",
        s(&lbr),
        "--exact",
    ]);
    assert_refused(&out, "has no debugging information");
    let out = retrace(&["lbr", "convert", s(&plain_lbr), "--analysed", s(&writer)]);
    assert_refused(&out, "is a writer");
    let other = dir.join("sieve");
    build_plain("sieve", true, &other);
    let out = retrace(&["lbr", "convert", s(&plain_lbr), "--analysed", s(&other)]);
    assert_refused(&out, "is not the ordinary build of the writer's sources");
    // The analysed program the recording names was rebuilt since.
    std::fs::copy(&other, &plain).unwrap();
    let out = retrace(&["lbr", "convert", s(&lbr)]);
    assert_refused(
        &out,
        "is not the analysed program this recording was made with",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
