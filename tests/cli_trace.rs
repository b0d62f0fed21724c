//! End-to-end tests of the trace commands (`record`, `estimate`, `compare`,
//! `profile`) and of bad traces: each damaged, foreign or missing trace must
//! give exit status 125 and one line on stderr, never a panic or a number.
//! The byte offsets used here are the layout of `docs/FORMATS.md` ("Trace
//! files (.rtrace)").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const MAGIC: &[u8; 8] = b"\x89RTRACE\n";
const TRAILER_LEN: usize = 68;
/// Bytes of the trailer covered by its CRC-32 (which follows them).
const TRAILER_CRC_AT: usize = 56;
const SEGMENT_HEADER_LEN: usize = 20;

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .output()
        .expect("retrace runs")
}

fn program(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("programs/bin")
        .join(name);
    assert!(p.is_file(), "{} is missing", p.display());
    p.to_str().unwrap().to_string()
}

/// A file under the temporary directory with a name no other test (or
/// test process) uses; removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new(what: &str) -> Temp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        Temp(std::env::temp_dir().join(format!(
            "retrace-cli-trace-{}-{n}-{what}",
            std::process::id()
        )))
    }
    fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
    fn write(what: &str, bytes: &[u8]) -> Temp {
        let t = Temp::new(what);
        std::fs::write(&t.0, bytes).unwrap();
        t
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `retrace record PROG -o TRACE --json`; returns the trace and the JSON
/// summary (the last line of stdout, after the program's own output).
fn record(prog: &str) -> (Temp, serde_json::Value) {
    let trace = Temp::new("trace.rtrace");
    let out = retrace(&["record", &program(prog), "-o", trace.s(), "--json"]);
    assert!(out.status.success(), "record {prog}: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    (trace, json)
}

/// Exit status 125, exactly one line on stderr starting `retrace: error:`,
/// no panic text, nothing on stdout, every `needle` in the line.
fn assert_bad_input(out: &Output, case: &str, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(125), "{case}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{case}: expected one line, got {err:?}");
    assert!(lines[0].starts_with("retrace: error: "), "{case}: {err:?}");
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!err.contains(bad), "{case}: {err:?}");
    }
    assert!(out.stdout.is_empty(), "{case}: printed a result anyway");
    for n in needles {
        assert!(lines[0].contains(n), "{case}: {n:?} missing from {err:?}");
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), as `crc32fast`.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, e) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *e = c;
    }
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Offset of the first segment: after magic, version, length, body, CRC.
fn first_segment(bytes: &[u8]) -> usize {
    12 + usize::from(u16::from_le_bytes([bytes[10], bytes[11]])) + 4
}

/// The trace with one trailer field (byte offset within the trailer)
/// changed by `delta` and the trailer's CRC-32 recomputed, so the damage
/// passes the checksum and only the replay can notice it.
fn with_trailer_field(bytes: &[u8], field: usize, delta: i64) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let t = b.len() - TRAILER_LEN;
    assert_eq!(b[t], b'T');
    assert_eq!(&b[t + TRAILER_CRC_AT + 4..], b"RTRACEND");
    assert_eq!(
        crc32(&b[t..t + TRAILER_CRC_AT]),
        u32::from_le_bytes(
            b[t + TRAILER_CRC_AT..t + TRAILER_CRC_AT + 4]
                .try_into()
                .unwrap()
        ),
        "the test's CRC-32 must agree with the writer's"
    );
    let v = le64(&b, t + field).wrapping_add_signed(delta);
    b[t + field..t + field + 8].copy_from_slice(&v.to_le_bytes());
    let crc = crc32(&b[t..t + TRAILER_CRC_AT]);
    b[t + TRAILER_CRC_AT..t + TRAILER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn crc32_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn record_then_estimate_and_check() {
    let prog = program("nqueens-rv32-O2.elf");
    let (trace, rec) = record("nqueens-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(
        u16::from_le_bytes([bytes[8], bytes[9]]),
        1,
        "format version"
    );
    assert_eq!(bytes[20], 32, "xlen");
    assert_eq!(&bytes[bytes.len() - 8..], b"RTRACEND");
    assert_eq!(rec["trace_bytes"].as_u64(), Some(bytes.len() as u64));
    let t = bytes.len() - TRAILER_LEN;
    let instructions = rec["instructions"].as_u64().unwrap();
    assert!(instructions > 0);
    assert_eq!(le64(&bytes, t + 8), instructions);
    assert_eq!(le64(&bytes, t + 16), rec["branches"].as_u64().unwrap());

    let out = retrace(&[
        "estimate",
        &prog,
        trace.s(),
        "--core",
        "ideal",
        "--json",
        "--check",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &j["estimates"][0];
    assert_eq!(e["core"], "ideal");
    assert_eq!(e["instructions"].as_u64(), Some(instructions));
    // One cycle per instruction on `ideal`.
    assert_eq!(e["cycles"].as_u64(), Some(instructions));
    assert_eq!(j["check"]["matches"], true);
    assert_eq!(j["check"]["instructions"].as_u64(), Some(instructions));
}

#[test]
fn trace_of_another_program_names_both_identities() {
    let (nq, _) = record("nqueens-rv32-O2.elf");
    let (crc, _) = record("crc32-rv32-O2.elf");
    let nq_id = format!("{:016x}", le64(&std::fs::read(&nq.0).unwrap(), 12));
    let crc_id = format!("{:016x}", le64(&std::fs::read(&crc.0).unwrap(), 12));
    assert_ne!(nq_id, crc_id);
    let out = retrace(&[
        "estimate",
        &program("nqueens-rv32-O2.elf"),
        crc.s(),
        "--core",
        "ideal",
    ]);
    assert_bad_input(
        &out,
        "foreign trace",
        &["crc32-rv32-O2.elf", "nqueens-rv32-O2.elf", &nq_id, &crc_id],
    );
    let out = retrace(&["profile", &program("crc32-rv32-O2.elf"), nq.s()]);
    assert_bad_input(&out, "foreign trace (profile)", &[&nq_id, &crc_id]);
}

#[test]
fn truncated_traces_are_one_line_errors() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, _) = record("crc32-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();
    let seg = first_segment(&bytes);
    let n = bytes.len();
    for cut in [
        0,
        5,
        8,
        11,
        20,
        seg - 1,
        seg,
        seg + 1,
        seg + SEGMENT_HEADER_LEN,
        seg + SEGMENT_HEADER_LEN + 7,
        n / 2,
        n - TRAILER_LEN - 1,
        n - TRAILER_LEN,
        n - 30,
        n - 1,
    ] {
        let cut_file = Temp::write("cut.rtrace", &bytes[..cut]);
        let out = retrace(&["estimate", &prog, cut_file.s(), "--core", "ideal"]);
        let case = format!("cut at {cut} of {n}");
        if cut < 8 {
            assert_bad_input(&out, &case, &[cut_file.s(), "not a retrace trace"]);
        } else {
            assert_bad_input(&out, &case, &[cut_file.s(), "truncated", "offset"]);
        }
    }
}

#[test]
fn corrupt_segment_names_segment_and_offset() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, _) = record("crc32-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();
    let seg = first_segment(&bytes);
    assert_eq!(bytes[seg], b'S', "a segment follows the header");
    let stored = u32::from_le_bytes(bytes[seg + 12..seg + 16].try_into().unwrap()) as usize;
    let payload = seg + SEGMENT_HEADER_LEN;
    for at in [payload, payload + stored / 2, payload + stored - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        let bad = Temp::write("flip.rtrace", &b);
        let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
        assert_bad_input(
            &out,
            &format!("byte {at} flipped"),
            &[
                "corrupt",
                "checksum mismatch in segment 0",
                &format!("offset {seg}"),
            ],
        );
    }
    // The segment's own CRC field, and its sequence number.
    for (at, what) in [
        (seg + 16, "checksum mismatch in segment 0"),
        (seg + 4, "where 0 was expected"),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x01;
        let bad = Temp::write("flip.rtrace", &b);
        let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
        assert_bad_input(
            &out,
            &format!("byte {at} flipped"),
            &[what, &format!("offset {seg}")],
        );
    }
    // A flipped byte in the header (the program identity).
    let mut b = bytes.clone();
    b[13] ^= 0x80;
    let bad = Temp::write("flip.rtrace", &b);
    let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
    assert_bad_input(&out, "header byte flipped", &["header checksum mismatch"]);
}

#[test]
fn unknown_version_non_trace_and_missing_files() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, _) = record("crc32-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();

    let mut b = bytes.clone();
    b[8..10].copy_from_slice(&2u16.to_le_bytes());
    let v2 = Temp::write("v2.rtrace", &b);
    for cmd in ["estimate", "profile"] {
        let mut args = vec![cmd, &prog, v2.s()];
        if cmd == "estimate" {
            args.extend(["--core", "ideal"]);
        }
        let out = retrace(&args);
        assert_bad_input(&out, "version 2", &["version 2", "version 1"]);
    }

    // The ELF itself, an empty file and a text file are not traces.
    let empty = Temp::write("empty.rtrace", b"");
    let text = Temp::write("text.rtrace", b"RTRACE is not a trace\n");
    for not_trace in [prog.as_str(), empty.s(), text.s()] {
        let out = retrace(&["estimate", &prog, not_trace, "--core", "ideal"]);
        assert_bad_input(&out, not_trace, &[not_trace, "not a retrace trace"]);
    }

    let missing = Temp::new("missing.rtrace");
    let out = retrace(&["estimate", &prog, missing.s(), "--core", "ideal"]);
    assert_bad_input(&out, "missing trace", &[missing.s()]);
    let out = retrace(&["profile", &prog, missing.s()]);
    assert_bad_input(&out, "missing trace (profile)", &[missing.s()]);
}

#[test]
fn totals_that_do_not_match_the_replay_are_errors() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, rec) = record("crc32-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();
    let branches = rec["branches"].as_u64().unwrap();
    // (trailer field offset, change, words the message must contain)
    let cases: [(usize, i64, Vec<String>); 5] = [
        (
            16,
            1,
            vec![
                "totals do not match".into(),
                format!("recorded {} branches", branches + 1),
                format!("the replay used {branches}"),
            ],
        ),
        (16, -1, vec!["totals do not match".into()]),
        (24, 1, vec!["totals do not match".into()]),
        (
            32,
            1,
            vec!["totals do not match".into(), "1 escapes".into()],
        ),
        // Far fewer instructions: the replay stops with history unread.
        (8, -100_000, vec!["branch bits left unread".into()]),
    ];
    for (field, delta, needles) in cases {
        let bad = Temp::write("totals.rtrace", &with_trailer_field(&bytes, field, delta));
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
        assert_bad_input(&out, &format!("field {field} {delta:+}"), &needles);
        let out = retrace(&["profile", &prog, bad.s(), "--json"]);
        assert_bad_input(&out, &format!("profile, field {field} {delta:+}"), &needles);
    }
    // The segment count in the trailer (a u32 at offset 4).
    let mut b = bytes.clone();
    let t = b.len() - TRAILER_LEN;
    b[t + 4] += 1;
    let crc = crc32(&b[t..t + TRAILER_CRC_AT]);
    b[t + TRAILER_CRC_AT..t + TRAILER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    let bad = Temp::write("segments.rtrace", &b);
    let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
    assert_bad_input(
        &out,
        "segment count",
        &["trailer counts 2 segments, the file has 1"],
    );
}

/// A trailer whose instruction total was rewritten by a few instructions
/// (with a valid CRC): the replay stops elsewhere than the recorded run's
/// last instruction, and says so instead of giving a wrong number.
#[test]
fn instruction_total_that_does_not_match_is_an_error() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, _) = record("crc32-rv32-O2.elf");
    let bytes = std::fs::read(&trace.0).unwrap();
    for delta in [-1, 5] {
        let bad = Temp::write("insns.rtrace", &with_trailer_field(&bytes, 8, delta));
        let out = retrace(&["estimate", &prog, bad.s(), "--core", "ideal"]);
        assert_bad_input(&out, &format!("instructions {delta:+}"), &[]);
    }
}

/// A recording cut by `--max-insns` anywhere (right after a conditional
/// branch included, whose bit was recorded) replays to the same count.
#[test]
fn recording_cut_by_max_insns_replays() {
    let prog = program("crc32-rv32-O2.elf");
    for limit in 1000..1012 {
        let trace = Temp::new("limit.rtrace");
        let limit_s = limit.to_string();
        let out = retrace(&["record", &prog, "-o", trace.s(), "--max-insns", &limit_s]);
        assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
        let out = retrace(&["estimate", &prog, trace.s(), "--core", "ideal", "--json"]);
        assert!(out.status.success(), "limit {limit}: {}", stderr(&out));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["estimates"][0]["cycles"].as_u64(), Some(limit));
    }
}

#[test]
fn compare_reports_every_field_and_no_error_on_inorder5() {
    let out = retrace(&[
        "compare",
        &program("nqueens-rv32-O2.elf"),
        "--core",
        "inorder5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in [
        "reference_cycles",
        "estimated_cycles",
        "error_cycles",
        "error_percent",
        "reference_seconds",
        "record_seconds",
        "estimate_seconds",
        "speedup",
    ] {
        assert!(j[field].is_number(), "{field} missing or not a number: {j}");
    }
    let reference = j["reference_cycles"].as_u64().unwrap();
    assert!(reference > j["instructions"].as_u64().unwrap() / 2);
    assert_eq!(j["estimated_cycles"].as_u64(), Some(reference));
    assert_eq!(j["error_cycles"].as_i64(), Some(0));
    assert_eq!(j["error_percent"].as_f64(), Some(0.0));
    let est = j["estimate_seconds"].as_f64().unwrap();
    let speedup = j["speedup"].as_f64().unwrap();
    assert!(est > 0.0 && speedup > 0.0);
    let expected = j["reference_seconds"].as_f64().unwrap() / est;
    assert!(
        (speedup - expected).abs() <= 1e-9 * expected.max(1.0),
        "{j}"
    );
}

#[test]
fn bench_times_every_step_and_its_estimates_are_exact_on_inorder5() {
    let out = retrace(&[
        "bench",
        &program("nqueens-rv32-O2.elf"),
        "--core",
        "inorder5",
        "--rounds",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = j["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "run",
            "record",
            "record --no-dcache",
            "cycle-level",
            "estimate fast",
            "estimate control",
            "estimate every preset"
        ]
    );
    for s in steps {
        let (fastest, median) = (s["fastest_seconds"].as_f64(), s["median_seconds"].as_f64());
        assert!(fastest.unwrap() > 0.0 && fastest <= median, "{s}");
    }
    for ratio in [
        "record_over_run",
        "record_no_dcache_over_run",
        "cycle_level_over_fast",
        "cycle_level_over_control",
        "every_preset_over_cycle_level",
    ] {
        assert!(j[ratio]["median"].as_f64().unwrap() > 0.0, "{ratio}: {j}");
        assert!(j[ratio]["fastest"].as_f64().unwrap() > 0.0, "{ratio}: {j}");
    }
    // What was timed is the real pipeline: both fidelities are exact on
    // inorder5.
    let reference = j["reference_cycles"].as_u64().unwrap();
    assert!(reference > j["instructions"].as_u64().unwrap());
    assert_eq!(j["fast_cycles"].as_u64(), Some(reference));
    assert_eq!(j["control_cycles"].as_u64(), Some(reference));

    let out = retrace(&["bench", &program("nqueens-rv32-O2.elf"), "--rounds", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = retrace(&[
        "bench",
        &program("nqueens-rv32-O2.elf"),
        "--core",
        "no-such-core",
    ]);
    assert_bad_input(&out, "unknown core", &["no-such-core"]);
}

#[test]
fn profile_lists_functions_including_main() {
    let prog = program("nqueens-rv32-O2.elf");
    let (trace, rec) = record("nqueens-rv32-O2.elf");
    let out = retrace(&["profile", &prog, trace.s(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["instructions"], rec["instructions"]);
    let funcs = j["functions"].as_array().unwrap();
    let main = funcs
        .iter()
        .find(|f| f["name"] == "main")
        .unwrap_or_else(|| panic!("no main in {funcs:?}"));
    assert!(main["calls"].as_u64().unwrap() >= 1);
    assert!(
        main["inclusive_cycles"].as_u64().unwrap() >= main["exclusive_cycles"].as_u64().unwrap()
    );
    assert!(main["inclusive_cycles"].as_u64().unwrap() > 0);
    assert!(!j["branches"].as_array().unwrap().is_empty());
}

/// A core of the user's own with a data cache no preset has: `record
/// --dcache` measures its miss rate, `estimate` uses it, and the result
/// equals the cycle-level engine's (`compare` measures the core's geometry
/// by itself).
#[test]
fn own_core_data_cache_is_measured_and_used() {
    let prog = program("dijkstra-rv32-O2.elf");
    let out = retrace(&["cores", "--show", "rocket"]);
    let toml = String::from_utf8(out.stdout)
        .unwrap()
        .replace("name = \"rocket\"", "name = \"rocket32k\"")
        .replace("size = 16384", "size = 32768")
        .replace("ways = 4", "ways = 8");
    let core = Temp::write("rocket32k.toml", toml.as_bytes());
    let trace = Temp::new("own.rtrace");
    let out = retrace(&["record", &prog, "-o", trace.s(), "--dcache", "32768:8:64"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = retrace(&["estimate", &prog, trace.s(), "--core", core.s(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let est = &j["estimates"][0];
    assert_eq!(est["dcache_measured"], true, "{j}");
    let out = retrace(&["compare", &prog, "--core", core.s(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(est["cycles"], c["reference_cycles"], "{j}\n{c}");
    assert_eq!(c["error_cycles"], 0);
    // A geometry that is not one is refused by the argument parser.
    let out = retrace(&["record", &prog, "-o", trace.s(), "--dcache", "1000:3:64"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Every reporting command spells machine output `--format text|json|csv`;
/// `--json` stays as the same thing, and CSV carries the JSON rows' figures
/// under the same names.
#[test]
fn format_json_csv_and_the_json_alias_agree() {
    let prog = program("crc32-rv32-O2.elf");
    let (trace, _) = record(&prog);
    let est = |fmt: &[&str]| {
        let mut args = vec![
            "estimate",
            &prog,
            trace.s(),
            "--core",
            "ideal",
            "--core",
            "rocket",
        ];
        args.extend_from_slice(fmt);
        let out = retrace(&args);
        assert!(out.status.success(), "{fmt:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let strip = |mut v: serde_json::Value| {
        for e in v["estimates"].as_array_mut().unwrap() {
            e.as_object_mut().unwrap().remove("seconds");
        }
        v
    };
    let json: serde_json::Value = serde_json::from_str(&est(&["--format", "json"])).unwrap();
    let alias: serde_json::Value = serde_json::from_str(&est(&["--json"])).unwrap();
    assert_eq!(strip(json.clone()), strip(alias));

    let csv = est(&["--format", "csv"]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for (row, e) in rows.iter().zip(json["estimates"].as_array().unwrap()) {
        assert_eq!(row[col("core")], e["core"].as_str().unwrap());
        assert_eq!(row[col("cycles")], e["cycles"].to_string());
        assert_eq!(row[col("instructions")], e["instructions"].to_string());
    }

    // A format that does not exist is a usage error, as for any option.
    let out = retrace(&["cores", "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // cores: one CSV row per preset, as many as JSON entries.
    let out = retrace(&["cores", "--format", "csv"]);
    let csv_rows = String::from_utf8(out.stdout).unwrap().lines().count() - 1;
    let out = retrace(&["cores", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(csv_rows, j.as_array().unwrap().len());
    // Each core says which FP extensions it has and which of its units take
    // one operation at a time, as its TOML does.
    let core = |name: &str| {
        j.as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(core("rocket")["float"], "double");
    assert_eq!(core("rocket")["busy"]["fp_sqrt_d"], 25);
    assert_eq!(core("rocket")["fp_blocks_all"], false);
    assert_eq!(core("cv32e40p")["float"], "single");
    assert_eq!(core("cv32e40p")["fp_blocks_all"], true);
    assert_eq!(core("picorv32")["float"], "none");
    assert!(core("picorv32")["busy"].as_object().unwrap().is_empty());
    assert!(core("ideal")["float"].is_null());
    // u74 runs ALU operations, shifts and branches early or late, two
    // stages apart; a core without late execution says nothing of it.
    assert_eq!(
        core("u74")["late_alu"],
        serde_json::json!(["alu", "shift", "branch"])
    );
    assert_eq!(core("u74")["late_alu_stages"], 2);
    assert!(core("rocket").get("late_alu").is_none());
    let text = String::from_utf8(retrace(&["cores"]).stdout).unwrap();
    let line = |start: &str| {
        text.lines()
            .filter(|l| l.starts_with(start))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(
        line("rocket ").iter().any(|l| l.contains("fp_sqrt_d 25")),
        "{text}"
    );
    assert!(
        line("cv32e40p ")
            .iter()
            .any(|l| l.contains("no FP operation issues meanwhile")),
        "{text}"
    );
    assert!(
        line("u74 ")
            .iter()
            .any(|l| l.contains("alu, shift, branch, 2 stages")),
        "{text}"
    );
}

/// A failed recording leaves the previous trace at the output path as it
/// was, and no temporary file beside it: the trace is written to a
/// temporary file and renamed into place only when whole.
#[test]
fn failed_record_keeps_the_previous_trace() {
    use retrace_isa::{csr, Op, Xlen};
    use retrace_testkit::asm::{bytes, word, T0};
    use retrace_testkit::elf::ElfImage;
    // Install a trap handler at an illegal instruction (all zeros), then
    // execute it: the handler traps at its first instruction, forever,
    // without retiring anything, so the recorder stops the run at once
    // (no --max-insns needed) and the recording fails.
    let i = |op, rd, rs1, rs2, imm| word(Xlen::Rv64, op, rd, rs1, rs2, imm);
    let code = [
        i(Op::Auipc, T0, 0, 0, 0),
        i(Op::Addi, T0, T0, 0, 12),
        i(Op::Csrrw, 0, T0, 0, i32::from(csr::MTVEC)),
        0,
    ];
    let dir = Temp::new("failed-record-dir");
    std::fs::create_dir(&dir.0).unwrap();
    let elf = dir.0.join("trap.elf");
    std::fs::write(&elf, ElfImage::riscv64().build(&bytes(&code))).unwrap();
    let trace = dir.0.join("kept.rtrace");
    let ok = retrace(&[
        "record",
        &program("crc32-rv32-O2.elf"),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let before = std::fs::read(&trace).unwrap();

    let out = retrace(&[
        "record",
        elf.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(
        stderr(&out).contains("traps at its first instruction"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        before,
        "the previous trace changed"
    );
    let mut left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["kept.rtrace", "trap.elf"]);
    std::fs::remove_dir_all(&dir.0).unwrap();
}

/// An output path ending in a slash names a directory: `record` refuses
/// it before running the program (it used to run it to the end and then
/// fail to rename its temporary file, naming that file).
#[test]
fn record_refuses_a_directory_path_before_running() {
    let dir = Temp::new("slash-dir");
    std::fs::create_dir(&dir.0).unwrap();
    let target = format!("{}/file.rtrace/", dir.s());
    let out = retrace(&["record", &program("crc32-rv32-O2.elf"), "-o", &target]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ending in a slash") && !err.contains(".partial"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Refused before the run: the program printed nothing.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0);
    std::fs::remove_dir(&dir.0).unwrap();
}

/// A program that takes traps — a load outside memory in the middle of a
/// loop, ten times, with a handler that returns past it — records, and the
/// estimate from its trace checks out against the functional engine
/// (`--check`) and equals the cycle-level engine (`compare`); `pp --check`
/// follows the run with no mismatch.
#[test]
fn record_and_estimate_a_program_that_traps() {
    use retrace_isa::{csr, Op, Xlen};
    use retrace_testkit::asm::{bytes, word, A0, A1, EBREAK, S0, SEMI_POST, SEMI_PRE, T0, T1};
    use retrace_testkit::elf::ElfImage;
    const S1: u8 = 9;
    const T2: u8 = 7;
    let i = |op, rd, rs1, rs2, imm| word(Xlen::Rv32, op, rd, rs1, rs2, imm);
    let code = [
        i(Op::Auipc, T0, 0, 0, 0),
        i(Op::Addi, T0, T0, 0, 17 * 4), // the handler, word 17
        i(Op::Csrrw, 0, T0, 0, i32::from(csr::MTVEC)),
        i(Op::Addi, S0, 0, 0, 10),
        // loop (word 4): the load faults; the handler skips it.
        i(Op::Lw, T1, 0, 0, 0),
        i(Op::Addi, T1, T1, 0, 1),
        i(Op::Addi, S0, S0, 0, -1),
        i(Op::Bne, 0, S0, 0, -12),
        // Exit (SYS_EXIT_EXTENDED) with the traps counted in s1.
        i(Op::Auipc, A1, 0, 0, 0x10000),
        i(Op::Lui, T0, 0, 0, 0x20 << 12),
        i(Op::Addi, T0, T0, 0, 0x26),
        i(Op::Sw, 0, A1, T0, 0),
        i(Op::Sw, 0, A1, S1, 4),
        i(Op::Addi, A0, 0, 0, 0x20),
        SEMI_PRE,
        EBREAK,
        SEMI_POST,
        // The handler (word 17): count, return past the trapping load.
        i(Op::Addi, S1, S1, 0, 1),
        i(Op::Csrrs, T2, 0, 0, i32::from(csr::MEPC)),
        i(Op::Addi, T2, T2, 0, 4),
        i(Op::Csrrw, 0, T2, 0, i32::from(csr::MEPC)),
        i(Op::Mret, 0, 0, 0, 0),
    ];
    let elf = Temp::write("traps.elf", &ElfImage::riscv32().build(&bytes(&code)));
    let trace = Temp::new("traps.rtrace");
    let out = retrace(&["record", elf.s(), "-o", trace.s(), "--format", "json"]);
    assert!(out.status.success(), "record: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let rec: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(rec["exit_code"], 10, "{rec}");

    let out = retrace(&[
        "estimate",
        elf.s(),
        trace.s(),
        "--core",
        "rocket",
        "--core",
        "inorder5",
        "--check",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "estimate: {}", stderr(&out));
    let est: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for e in est["estimates"].as_array().unwrap() {
        assert_eq!(e["instructions"], rec["instructions"], "{est}");
    }

    for (core, fidelity) in [
        ("inorder5", "fast"),
        ("picorv32", "fast"),
        ("rocket", "control"),
    ] {
        let out = retrace(&[
            "compare",
            elf.s(),
            "--core",
            core,
            "--fidelity",
            fidelity,
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "compare {core}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let cmp: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        if core == "rocket" {
            // The data-cache term is statistical; the rest is exact (the
            // exactness sweep in retrace-estimate's tests/traps.rs).
            assert!(cmp["error_percent"].as_f64().unwrap().abs() < 2.0, "{cmp}");
        } else {
            assert_eq!(cmp["error_cycles"], 0, "{core}: {cmp}");
        }
    }

    let out = retrace(&["pp", elf.s(), "--check", "--format", "json"]);
    assert!(out.status.success(), "pp --check: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let chk: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(chk["mismatches"], 0, "{chk}");
    assert_eq!(chk["traps"], 10, "{chk}");
    assert_eq!(chk["coverage_percent"], 100.0, "{chk}");
}
