//! End-to-end tests of `retrace clock …`: files in, files and exit statuses out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .output()
        .expect("runs")
}

/// A scratch directory of its own for each test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-clock-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// `clock correct` with zero offsets must refuse these files with status 125
/// and a message containing `message`; `input` is shown on failure.
fn assert_correct_fails(history: &str, events: &str, message: &str, input: &str) {
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        history,
        "--zero-offsets",
        events,
        "-o",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(125), "{input}");
    assert!(
        stderr(&out).contains(message),
        "expected {message:?} in {}",
        stderr(&out)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SEED_HISTORY: &str = "\
processor,counter,mhz
1,0,100
1,100000000,50
1,150000000,150
2,0,25
2,50000000,100
2,150000000,150
";

#[test]
fn seed_histories_give_three_seconds_and_the_same_instant() {
    let dir = scratch("seed-history");
    let history = write(&dir, "h.csv", SEED_HISTORY);
    let events = write(
        &dir,
        "e.csv",
        "processor,counter,payload\n1,300000000,end\n1,150000000,T1\n2,50000000,T1\n",
    );
    let out_path = dir.join("out.csv");
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        &history,
        "--zero-offsets",
        &events,
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(out_path).unwrap();
    assert_eq!(
        csv,
        "processor,counter,time_ns,payload\n\
         1,300000000,3000000000.000000000,end\n\
         1,150000000,2000000000.000000000,T1\n\
         2,50000000,2000000000.000000000,T1\n"
    );
}

#[test]
fn seed_sync_round_moves_the_responder_by_fifty() {
    // At 1 Hz a tick is a second, so virtual time is the patent's arithmetic.
    let dir = scratch("seed-sync");
    let history = write(&dir, "h.csv", "processor,counter,hz\n1,0,1\n2,0,1\n");
    let sync = write(
        &dir,
        "s.csv",
        "reference,responder,A,B,C,a,b,c\n1,2,75,125,225,275,425,425\n",
    );
    let events = write(
        &dir,
        "e.csv",
        "processor,counter,payload\n2,875,responder\n1,825,reference\n",
    );
    for estimator in ["mean", "min-rtt"] {
        let out = retrace(&[
            "clock",
            "correct",
            "--history",
            &history,
            "--sync",
            &sync,
            &events,
            "-o",
            "-",
            "--format",
            "json",
            "--estimator",
            estimator,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json[0]["time_ns"].to_string(), "925000000000.0");
        assert_eq!(json[1]["time_ns"].to_string(), "825000000000.0");
        assert!(
            stderr(&out).contains("offset 50000000000.000 ns"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn bad_inputs_are_errors_with_file_and_line_and_status_125() {
    let dir = scratch("bad");
    let events = write(&dir, "e.csv", "processor,counter\n1,5\n");
    let cases = [
        (
            "processor,counter,hz\n1,0,10\n1,20,5\n1,10,5\n",
            "h.csv:4: processor 1: history rows out of order: counter 10 after 20",
        ),
        (
            "processor,counter,hz\n1,0,10\n1,0,5\n",
            "h.csv:3: processor 1: duplicate history row at counter 0",
        ),
        (
            "processor,counter,hz\n1,0,0\n",
            "h.csv:2: processor 1: frequency must be positive, got 0 hz",
        ),
        (
            "processor,counter,khz\n1,0,-800000\n",
            "h.csv:2: processor 1: frequency must be positive, got -800000 khz",
        ),
        (
            "processor,counter,hz\n1,zero,10\n",
            "h.csv:2: malformed row: counter \"zero\" is not a valid number",
        ),
    ];
    for (text, message) in cases {
        let history = write(&dir, "h.csv", text);
        assert_correct_fails(&history, &events, message, text);
    }
    let history = write(&dir, "h.csv", "processor,counter,hz\n1,100,10\n2,0,10\n");
    let bad_events = [
        (
            "processor,counter\n1,150\n1,99\n",
            "e.csv:3: processor 1: counter 99 is before the history starts at 100",
        ),
        (
            "processor,counter\n7,150\n",
            "e.csv:2: processor 7 has no frequency history",
        ),
        (
            "processor,counter\n1,150,x,y\n",
            "e.csv:2: malformed row: 4 fields where the header has 2",
        ),
    ];
    for (text, message) in bad_events {
        let events = write(&dir, "e.csv", text);
        assert_correct_fails(&history, &events, message, text);
    }
    // A responder that never synchronised with the reference.
    let sync = write(
        &dir,
        "s.csv",
        "reference,responder,A,B,C,a,b,c\n2,3,1,2,3,4,5,6\n",
    );
    let history3 = write(
        &dir,
        "h3.csv",
        "processor,counter,hz\n1,0,10\n2,0,10\n3,0,10\n",
    );
    let events = write(&dir, "e.csv", "processor,counter\n1,150\n");
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        &history3,
        "--sync",
        &sync,
        &events,
        "-o",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out)
            .contains("e.csv:2: processor 1 has no synchronisation rounds with reference 2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn skip_bad_counts_every_row_it_leaves_out() {
    let dir = scratch("skip");
    let history = write(
        &dir,
        "h.csv",
        "processor,counter,hz\n1,0,10\n1,5,0\n1,9,20\n1,8,20\n",
    );
    let events = write(
        &dir,
        "e.csv",
        "processor,counter,payload\n1,10,ok\n9,1,unknown\n1,x,bad\n1,11,ok\n",
    );
    let out_path = dir.join("out.csv");
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        &history,
        "--zero-offsets",
        &events,
        "-o",
        out_path.to_str().unwrap(),
        "--skip-bad",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["events_corrected"], 2);
    assert_eq!(summary["skipped"]["total"], 4);
    assert_eq!(summary["skipped"]["by_kind"]["bad-frequency"], 1);
    assert_eq!(summary["skipped"]["by_kind"]["unsorted-history"], 1);
    assert_eq!(summary["skipped"]["by_kind"]["unknown-processor"], 1);
    assert_eq!(summary["skipped"]["by_kind"]["malformed"], 1);
    assert_eq!(
        std::fs::read_to_string(out_path).unwrap().lines().count(),
        3
    );
}

#[test]
fn ftrace_history_and_chrome_output() {
    let dir = scratch("chrome");
    // trace_clock=x86-tsc: integer timestamps are counter values.
    let history = write(
        &dir,
        "trace.txt",
        "# tracer: nop\n\
         <idle>-0 [000] d..2. 1000: cpu_frequency: state=1000000 cpu_id=0\n\
         <idle>-0 [001] d..2. 1000: cpu_frequency: state=2000000 cpu_id=1\n\
         bash-77  [000] ..... 1500: sched_switch: prev_comm=bash\n\
         <idle>-0 [000] d..2. 3000: policy_frequency: state=500000 cpu_id=0 policy_cpus=1\n",
    );
    let sync = write(
        &dir,
        "s.json",
        r#"[{"reference":0,"responder":1,"A":2000,"B":4000,"C":2100,"a":4300,"b":2200,"c":4500}]"#,
    );
    let events = write(&dir, "e.jsonl", "{\"processor\":0,\"counter\":2500,\"payload\":\"start\"}\n{\"processor\":1,\"counter\":4200,\"payload\":\"work\"}\n");
    let out_path = dir.join("trace.json");
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        &history,
        "--sync",
        &sync,
        &events,
        "-o",
        out_path.to_str().unwrap(),
        "--format",
        "chrome",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 lines of the history file are other trace events"),
        "{}",
        stderr(&out)
    );
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["processor 0", "processor 1"]);
    let counters = events.iter().filter(|e| e["ph"] == "C").count();
    assert_eq!(counters, 3, "two rows for CPU 0, one for CPU 1");
    let instants: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(instants.len(), 2);
    assert!(instants.iter().all(|e| e["ts"].as_f64().unwrap() >= 0.0));
}

#[test]
fn simulate_and_probe_report_json() {
    let out = retrace(&[
        "clock",
        "simulate",
        "--trials",
        "3",
        "--processors",
        "3",
        "--scenario",
        "symmetric",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs[0]["estimators"][1]["estimator"], "min-rtt");
    assert_eq!(runs[0]["estimators"][1]["within_bound"], 1.0);

    let out = retrace(&[
        "clock", "probe", "--cpus", "0,0", "--rounds", "200", "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rounds"], 200);
    assert_eq!(report["backward_steps"], 0);
    assert_eq!(report["estimates"].as_array().unwrap().len(), 2);
}

#[test]
fn simulate_probe_and_bench_print_text_json_or_csv_like_every_command() {
    let simulate = [
        "clock",
        "simulate",
        "--trials",
        "2",
        "--processors",
        "3",
        "--scenario",
        "symmetric",
    ];
    let probe = ["clock", "probe", "--cpus", "0,0", "--rounds", "100"];
    let bench = [
        "clock",
        "bench",
        "--events",
        "2000",
        "--changes",
        "10",
        "--repeat",
        "1",
    ];
    let with = |base: &[&str], more: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(more);
        let out = retrace(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // JSON through --format json, the same value as the hidden --json.
    let runs: serde_json::Value =
        serde_json::from_str(&with(&simulate, &["--format", "json"])).unwrap();
    assert_eq!(runs[0]["scenario"]["name"], "symmetric");
    assert_eq!(runs[0]["estimators"][1]["estimator"], "min-rtt");
    let probe_json: serde_json::Value =
        serde_json::from_str(&with(&probe, &["--format", "json"])).unwrap();
    // `pinned` is true, or says why not: never serde's {"Ok": null}.
    let pinned = &probe_json["pinned"];
    assert!(
        *pinned == serde_json::Value::Bool(true) || pinned["not_pinned"].is_string(),
        "{pinned}"
    );
    let bench_json: serde_json::Value =
        serde_json::from_str(&with(&bench, &["--format", "json"])).unwrap();
    assert_eq!(bench_json["events"], 2000);
    assert_eq!(bench_json["runs"], 1);
    assert!(bench_json["checksum"].is_string());

    // CSV: a header and one row per estimator (simulate, probe) or one row.
    let csv = with(&simulate, &["--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("scenario,drift,processors,trials,seed,estimator,within_bound"),
        "{csv}"
    );
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[2].starts_with("symmetric,constant,3,2,1,min-rtt,"),
        "{csv}"
    );
    let csv = with(&probe, &["--format", "csv"]);
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.starts_with("reference_cpu,responder_cpu,"), "{csv}");
    let csv = with(&bench, &["--format", "csv"]);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.starts_with("events,processors,changes_per_processor,runs,"),
        "{csv}"
    );

    // Text stays the default.
    assert!(with(&simulate, &[]).contains("within bound"));
    assert!(with(&probe, &[]).contains("round trip ns"));
    assert!(with(&bench, &[]).contains("M events/s (best of 1)"));
}

#[test]
fn correct_summary_is_chosen_with_summary_and_documented_in_help() {
    let dir = scratch("summary");
    let history = write(&dir, "h.csv", "processor,counter,hz\n1,0,10\n");
    let events = write(&dir, "e.csv", "processor,counter\n1,5\n");
    let out_path = dir.join("out.csv");
    let base = [
        "clock",
        "correct",
        "--history",
        &history,
        "--zero-offsets",
        &events,
        "-o",
        out_path.to_str().unwrap(),
    ];
    for spelling in [&["--summary", "json"][..], &["--json"][..]] {
        let mut args = base.to_vec();
        args.extend_from_slice(spelling);
        let out = retrace(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["events_corrected"], 1, "{spelling:?}");
        assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    }
    // Text: on stderr, so the events can take stdout.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--summary", "text"]);
    let out = retrace(&args);
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).starts_with("corrected 1 events onto processor 1's clock"));
    // JSON on stdout cannot share it with the events.
    let out = retrace(&[
        "clock",
        "correct",
        "--history",
        &history,
        "--zero-offsets",
        &events,
        "-o",
        "-",
        "--summary",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr(&out).contains("write the events to a file with -o"));

    let help = retrace(&["clock", "correct", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--summary <FORMAT>"), "{help}");
    assert!(
        help.contains("--format is the format of the corrected events"),
        "{help}"
    );
    assert!(!help.contains("--json"), "--json stays hidden: {help}");
}

#[test]
fn a_missing_input_names_its_cause_once_and_what_to_do() {
    let dir = scratch("missing");
    let history = write(&dir, "h.csv", "processor,counter,hz\n1,0,10\n");
    let events = write(&dir, "e.csv", "processor,counter\n1,5\n");
    let missing = dir.join("nope.csv");
    let missing = missing.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--history", missing, "--zero-offsets", &events],
            "cannot read frequency history",
        ),
        (
            &["--history", &history, "--zero-offsets", missing],
            "cannot read events",
        ),
        (
            &["--history", &history, "--sync", missing, &events],
            "cannot read synchronisation rounds",
        ),
    ];
    for (args, what) in cases {
        let mut all = vec!["clock", "correct"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "-"]);
        let out = retrace(&all);
        assert_eq!(out.status.code(), Some(125));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("retrace: error: "), "{err}");
        assert!(err.contains(what), "{err}");
        assert!(err.contains("nope.csv"), "{err}");
        assert!(err.contains("check the path"), "{err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "the cause once: {err}"
        );
    }
}

#[test]
fn an_output_path_ending_in_a_slash_is_refused() {
    let dir = scratch("slash");
    let history = write(&dir, "h.csv", "processor,counter,hz\n1,0,10\n");
    let events = write(&dir, "e.csv", "processor,counter\n1,5\n");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for output in ["sub/file.txt/", "file.txt/"] {
        let target = format!("{}/{output}", dir.display());
        let out = retrace(&[
            "clock",
            "correct",
            "--history",
            &history,
            "--zero-offsets",
            &events,
            "-o",
            &target,
        ]);
        assert_eq!(out.status.code(), Some(125), "{output}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("a path ending in a slash names a directory"),
            "{err}"
        );
        let file = target.trim_end_matches('/');
        assert!(!Path::new(file).exists(), "{file} was created");
    }
}

#[test]
fn ftrace_decimal_seconds_are_refused_with_advice() {
    let dir = scratch("seconds");
    // ftrace's default clock (local): seconds with microseconds.
    let history = write(
        &dir,
        "trace.txt",
        "# tracer: nop\n\
         <idle>-0 [000] d..2.  1234.567890: cpu_frequency: state=1000000 cpu_id=0\n\
         <idle>-0 [000] d..2.  1235.000001: cpu_frequency: state=2000000 cpu_id=0\n",
    );
    let events = write(&dir, "e.csv", "processor,counter\n0,1234567891\n");
    for skip in [false, true] {
        let mut args = vec![
            "clock",
            "correct",
            "--history",
            &history,
            "--zero-offsets",
            &events,
            "-o",
            "-",
        ];
        if skip {
            args.push("--skip-bad");
        }
        let out = retrace(&args);
        assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("trace.txt:2: timestamp 1234.567890 is in seconds"),
            "{err}"
        );
        assert!(err.contains("trace_clock"), "{err}");
        assert!(out.stdout.is_empty());
    }
}
