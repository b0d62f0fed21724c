//! `retrace record --harts N` and `retrace estimate` of the trace it
//! writes, through the command line: recorded under the clocks of a core
//! (`--schedule-core`), the estimate on that core is the multi-hart
//! cycle-level engine's (`retrace run --harts N --core`) exactly, also
//! for a core per hart; bad per-hart options and damaged traces are one
//! line and status 125.

use retrace_testkit::programs::program_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .output()
        .unwrap()
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("retrace-cli-harts-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn prog(name: &str) -> String {
    program_dir().join("mp").join(name).display().to_string()
}

/// The JSON object on the last line of stdout (`retrace run` exits with
/// the program's exit code, the others with 0).
fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.code().is_some_and(|c| c < 100),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim_end().lines().last().unwrap()).unwrap()
}

/// Makespan and per hart (core, instructions, busy, wait).
fn figures(v: &serde_json::Value) -> (u64, Vec<(String, u64, u64, u64)>) {
    let harts = v["harts"].as_array().expect("harts");
    (
        v["makespan"].as_u64().unwrap(),
        harts
            .iter()
            .map(|h| {
                (
                    h["core"].as_str().unwrap().to_string(),
                    h["instructions"].as_u64().unwrap(),
                    h["busy"].as_u64().unwrap(),
                    h["wait"].as_u64().unwrap(),
                )
            })
            .collect(),
    )
}

fn record(elf: &str, trace: &Path, extra: &[&str]) {
    let mut args = vec!["record", elf, "-o", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = retrace(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_estimate_of_a_clock_ordered_recording_is_the_engines() {
    for (elf, cores) in [
        ("workq-rv64-O2.elf", vec!["inorder5"]),
        (
            "pipeline-rv32-O2.elf",
            vec!["inorder5", "picorv32", "ideal"],
        ),
        (
            "stencil-rv32-O2.elf",
            vec!["picorv32", "inorder5", "inorder5"],
        ),
    ] {
        let elf = prog(elf);
        let trace = scratch().join("mp.rtrace");
        let harts = if cores.len() == 1 { "4" } else { "3" };
        let mut rec = vec!["--harts", harts];
        let mut est = vec!["--fidelity", "fast", "--format", "json"];
        let mut run = vec!["run", "--harts", harts, "--format", "json"];
        for c in &cores {
            rec.extend(["--schedule-core", c]);
            est.extend(["--core", c]);
            run.extend(["--core", c]);
        }
        record(&elf, &trace, &rec);
        let mut args = vec!["estimate", &elf, trace.to_str().unwrap()];
        args.extend(&est);
        let estimate = json(&retrace(&args));
        run.push(&elf);
        let truth = json(&retrace(&run));
        assert_eq!(figures(&estimate), figures(&truth), "{elf} on {cores:?}");
        assert_eq!(estimate["reordered"], 0);
        assert!(estimate["resources"]
            .as_array()
            .is_some_and(|r| !r.is_empty()));
    }
}

/// One line on stderr and status 125.
fn refused(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(want), "{err}");
}

#[test]
fn bad_per_hart_options_and_damaged_traces_are_one_line() {
    let elf = prog("reduce-rv64-O2.elf");
    let dir = scratch();
    let trace = dir.join("reduce.rtrace");
    record(&elf, &trace, &["--harts", "4"]);
    let t = trace.to_str().unwrap();
    refused(
        &retrace(&["estimate", &elf, t, "--core", "ideal", "--core", "rocket"]),
        "2 --core for 4 harts",
    );
    refused(
        &retrace(&["estimate", &elf, t, "--core", "picorv32"]),
        "supports RV32 only",
    );
    refused(
        &retrace(&["estimate", &elf, t, "--core", "ideal", "--check"]),
        "--check applies to a trace of one hart",
    );
    refused(
        &retrace(&[
            "run", "--harts", "4", "--core", "ideal", "--core", "ideal", &elf,
        ]),
        "2 --core for 4 harts",
    );
    refused(
        &retrace(&[
            "record",
            "--harts",
            "2",
            "--schedule-core",
            "a",
            "--schedule-core",
            "b",
            "--schedule-core",
            "c",
            &elf,
            "-o",
            t,
        ]),
        "3 --schedule-core for 2 harts",
    );
    refused(
        &retrace(&["profile", &elf, t]),
        "the trace holds 4 harts and this replay follows one",
    );
    // Cut short: no trailer, and no end of any hart's events.
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.join("cut.rtrace");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    refused(
        &retrace(&["estimate", &elf, cut.to_str().unwrap(), "--core", "ideal"]),
        "cut.rtrace",
    );
}

/// Record `elf` on 3 harts under inorder5's clocks at the `--mhz` options
/// `mhz`.
fn record_three_harts_at(elf: &str, trace: &Path, mhz: &[&str]) {
    let mut rec = vec!["--harts", "3", "--schedule-core", "inorder5"];
    rec.extend_from_slice(mhz);
    record(elf, trace, &rec);
}

/// Harts at their own frequencies (`--mhz`, one per hart): the estimate of
/// a recording made under those clocks is the engine's to the attosecond,
/// with the latest hart's time as the makespan; bad frequencies are one
/// line, from clap (status 2) or from retrace (125).
#[test]
fn harts_at_their_own_frequencies_estimate_as_they_run() {
    let elf = prog("reduce-rv32-O2.elf");
    let trace = scratch().join("mhz.rtrace");
    let t = trace.to_str().unwrap();
    let mhz = ["--mhz", "100", "--mhz", "33.333333", "--mhz", "250"];
    record_three_harts_at(&elf, &trace, &mhz);
    let mut args = vec![
        "estimate",
        &elf,
        t,
        "--core",
        "inorder5",
        "--fidelity",
        "fast",
    ];
    args.extend(mhz);
    args.extend(["--format", "json"]);
    let estimate = json(&retrace(&args));
    let mut run = vec![
        "run", "--harts", "3", "--core", "inorder5", "--format", "json",
    ];
    run.extend(mhz);
    run.push(&elf);
    let truth = json(&retrace(&run));
    assert_eq!(figures(&estimate), figures(&truth));
    let times = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["harts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["time_attos"].to_string(), h["mhz"].to_string()))
            .collect()
    };
    assert_eq!(times(&estimate), times(&truth));
    assert_eq!(estimate["harts"][1]["mhz"], 33.333333);
    let latest = truth["harts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["time_ns"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(truth["makespan_ns"].as_f64(), Some(latest));
    // The text report names the frequencies and the times.
    run.retain(|a| *a != "json" && *a != "--format");
    let text = retrace(&run);
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(
        err.contains("the latest hart's time") && err.contains("33.333333"),
        "{err}"
    );

    let two = retrace(&[
        "run", "--harts", "3", "--core", "ideal", "--mhz", "10", "--mhz", "20", &elf,
    ]);
    refused(&two, "2 --mhz for 3 harts");
    let zero = retrace(&["run", "--harts", "3", "--core", "ideal", "--mhz", "0", &elf]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("not a frequency in MHz"));
    // The cycle-level engine writes one hart's timeline, not several.
    refused(
        &retrace(&[
            "run",
            "--harts",
            "3",
            "--core",
            "ideal",
            "--timeline",
            "x.json",
            &elf,
        ]),
        "--timeline with --harts 3",
    );
}

/// `retrace estimate --timeline`: Chrome Trace Event JSON with a track per
/// hart whose slices — functions and waits — follow one another without
/// overlapping, whose waits add up to the hart's wait cycles at its
/// frequency and whose last slice ends at the hart's time; an instant per
/// synchronisation call and a frequency counter per hart.
#[test]
fn the_timeline_has_a_track_per_hart_on_one_time_axis() {
    let elf = prog("pipeline-rv64-O2.elf");
    let dir = scratch();
    let trace = dir.join("timeline.rtrace");
    let file = dir.join("timeline.json");
    let mhz = ["--mhz", "100", "--mhz", "62.5", "--mhz", "150"];
    record_three_harts_at(&elf, &trace, &mhz);
    let mut args = vec![
        "estimate",
        &elf,
        trace.to_str().unwrap(),
        "--core",
        "inorder5",
        "--fidelity",
        "fast",
        "--format",
        "json",
        "--timeline",
        file.to_str().unwrap(),
    ];
    args.extend(mhz);
    let report = json(&retrace(&args));
    let timeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = timeline["traceEvents"].as_array().unwrap();
    let of = |ph: &str, h: u64| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| e["ph"] == ph && (ph == "C" || e["tid"].as_u64() == Some(h)))
            .collect()
    };
    let mut calls = 0;
    for (h, hart) in report["harts"].as_array().unwrap().iter().enumerate() {
        let h = h as u64;
        let names = of("M", h);
        assert!(
            names
                .iter()
                .any(|e| e["args"]["name"] == format!("hart {h} (inorder5)")),
            "hart {h}'s track is named"
        );
        let slices = of("X", h);
        assert!(!slices.is_empty());
        let mut end = 0.0f64;
        let mut waited = 0.0;
        for s in &slices {
            let (ts, dur) = (s["ts"].as_f64().unwrap(), s["dur"].as_f64().unwrap());
            assert!(
                ts + 1e-6 >= end && dur >= 0.0,
                "hart {h}: {s} starts before {end}"
            );
            end = ts + dur;
            if s["cat"] == "wait" {
                waited += dur;
                assert!(s["name"].as_str().unwrap().starts_with("wait: "));
            }
        }
        let mhz = hart["mhz"].as_f64().unwrap();
        let want = hart["wait"].as_f64().unwrap() / mhz;
        assert!(
            (waited - want).abs() < 1e-3,
            "hart {h}: waits {waited} µs, report {want} µs"
        );
        let time = hart["time_ns"].as_f64().unwrap() / 1e3;
        assert!(
            (end - time).abs() < 1e-6 * time,
            "hart {h}: ends at {end} µs, report {time} µs"
        );
        assert!(slices
            .iter()
            .any(|s| s["name"] == "worker" || s["name"] == "main"));
        calls += of("i", h).len();
    }
    assert_eq!(calls as u64, report["calls"].as_u64().unwrap());
    assert_eq!(of("C", 0).len(), 3, "a frequency counter per hart");

    // An unwritable file is one line.
    refused(
        &retrace(&[
            "estimate",
            &elf,
            trace.to_str().unwrap(),
            "--core",
            "ideal",
            "--timeline",
            "/nonexistent/dir/t.json",
        ]),
        "cannot write the timeline",
    );
}
