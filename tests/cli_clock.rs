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
    // At 1 Hz a tick is a second, so virtual time is the seed's arithmetic.
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
