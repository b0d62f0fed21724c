//! The timeline of one hart's estimated run (`retrace estimate
//! --timeline`) against the cycle-level engine's (`retrace run --core
//! --timeline`): Chrome Trace Event JSON whose slices are the frames of
//! the program's functions, nested as the calls were, on the core's time.
//! On a core the replay times exactly, the two timelines are the same
//! slice for slice.

mod common;
use common::{retrace, succeeded};

use serde_json::Value;
use std::path::PathBuf;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A function slice: name, first cycle, cycles, depth.
type Slice = (String, u64, u64, u64);

/// The timeline at `path`: per process, its slices in file order; and the
/// processes' names.
fn read(path: &std::path::Path) -> (Vec<Vec<Slice>>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let json: Value = serde_json::from_str(&text).expect("the timeline is JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let mut slices: Vec<Vec<Slice>> = Vec::new();
    let mut names = Vec::new();
    for e in events {
        let pid = e["pid"].as_u64().expect("every event has a pid") as usize;
        assert!(pid >= 1, "{e}");
        if slices.len() < pid {
            slices.resize(pid, Vec::new());
        }
        match e["ph"].as_str().unwrap() {
            "M" if e["name"] == "process_name" => {
                names.push(e["args"]["name"].as_str().unwrap().to_string())
            }
            "M" => {}
            "X" => {
                let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
                assert!(ts >= 0.0 && dur > 0.0, "{e}");
                let args = &e["args"];
                slices[pid - 1].push((
                    e["name"].as_str().unwrap().to_string(),
                    args["first_cycle"].as_u64().unwrap(),
                    args["cycles"].as_u64().unwrap(),
                    args["depth"].as_u64().unwrap(),
                ));
            }
            other => panic!("unexpected event kind {other}: {e}"),
        }
    }
    (slices, names)
}

/// Slices nest: sorted by start, each one lies inside every slice still
/// open when it starts, one level deeper than the innermost.
fn assert_nested(slices: &[Slice]) {
    let mut open: Vec<(u64, u64)> = Vec::new();
    for (name, start, cycles, depth) in slices {
        let end = start + cycles;
        while open.last().is_some_and(|&(_, e)| e <= *start) {
            open.pop();
        }
        if let Some(&(_, outer_end)) = open.last() {
            assert!(
                end <= outer_end,
                "{name} at {start} leaves its caller's slice"
            );
        }
        assert!(
            *depth as usize >= open.len(),
            "{name} at {start}: depth {depth}"
        );
        open.push((*start, end));
    }
}

/// Engine and replay write the same timeline on every core the replay
/// times exactly (rocket without its data cache, whose misses the
/// replay estimates from a rate), for programs with deep and with many
/// calls; one estimate writes a process per core.
#[test]
fn the_replays_timeline_is_the_cycle_level_engines() {
    let dir = scratch();
    for (program, cores) in [
        ("exprparse-rv32-O2", &["inorder5", "picorv32", "rocket"][..]),
        ("nqueens-rv64-O2", &["ideal", "rocket"][..]),
        ("dhry-rv32-O2", &["inorder5"][..]),
    ] {
        let elf = format!("programs/bin/{program}.elf");
        let trace = dir.join(format!("{program}.rtrace"));
        succeeded(&retrace(&["record", &elf, "-o", trace.to_str().unwrap()]));
        let estimated = dir.join(format!("{program}-estimated.json"));
        let mut args = vec![
            "estimate",
            &elf,
            trace.to_str().unwrap(),
            "--set",
            "dcache=none",
            "--timeline",
            estimated.to_str().unwrap(),
        ];
        for c in cores {
            args.extend(["--core", c]);
        }
        succeeded(&retrace(&args));
        let (replayed, names) = read(&estimated);
        assert_eq!(replayed.len(), cores.len(), "{program}: a process per core");
        for (i, core) in cores.iter().enumerate() {
            assert!(names[i].contains(core), "{names:?}");
            let ran = dir.join(format!("{program}-{core}.json"));
            let out = retrace(&[
                "run",
                &elf,
                "--core",
                core,
                "--set",
                "dcache=none",
                "--timeline",
                ran.to_str().unwrap(),
            ]);
            // `run` exits with the program's status (exprparse's is its
            // checksum's low byte): that it ran is the timeline's report.
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("error"), "{program} on {core}: {err}");
            let (engine, _) = read(&ran);
            assert_eq!(engine.len(), 1);
            assert!(
                engine[0].len() > 100,
                "{program} on {core}: {} slices",
                engine[0].len()
            );
            assert_nested(&engine[0]);
            assert_eq!(
                replayed[i], engine[0],
                "{program} on {core}: replay and engine timelines differ"
            );
        }
    }
}

/// A short bound keeps the longest calls and says how many it left out;
/// the program's outermost frame is always among them.
#[test]
fn a_bounded_timeline_keeps_the_longest_calls_and_says_so() {
    let dir = scratch();
    let elf = "programs/bin/exprparse-rv32-O2.elf";
    let trace = dir.join("bounded.rtrace");
    succeeded(&retrace(&["record", elf, "-o", trace.to_str().unwrap()]));
    let file = dir.join("bounded.json");
    let out = retrace(&[
        "estimate",
        elf,
        trace.to_str().unwrap(),
        "--core",
        "inorder5",
        "--timeline",
        file.to_str().unwrap(),
        "--timeline-spans",
        "50",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("shorter ones are left out (--timeline-spans N keeps about N)"),
        "{err}"
    );
    let (slices, _) = read(&file);
    let kept = &slices[0];
    assert!(!kept.is_empty() && kept.len() <= 100, "{}", kept.len());
    assert!(kept.iter().any(|s| s.0 == "main"), "{kept:?}");
    assert_nested(kept);
}
