//! `retrace sweep` beyond one machine: the grid as plain commands
//! (`--emit-commands`) and as a Slurm job array (`--slurm`, on the
//! single-node cluster `scripts/slurm-local.sh` starts, as `.ci/run`
//! does); `sweep collect` must give exactly the local sweep's numbers, name
//! a cancelled task's points, and a re-run must submit only those.

mod common;
use common::{retrace, succeeded as ok};

use retrace_testkit::tools::{runs, skip_or_fail};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("retrace-sweep-batch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sweep's JSON without the wall times, which differ between runs.
fn figures(json: &str) -> Value {
    let mut v: Value = serde_json::from_str(json).unwrap();
    let strip = |row: &mut Value| {
        row.as_object_mut().unwrap().remove("seconds");
    };
    v.as_object_mut().unwrap().remove("seconds");
    strip(&mut v["base"]);
    for p in v["points"].as_array_mut().unwrap() {
        strip(p);
    }
    v
}

const GRID: [&str; 8] = [
    "--set",
    "icache.size=256..2048*2",
    "--set",
    "branch.predictor=bimodal,gshare",
    "--set",
    "branch.history_bits=8",
    "--set",
    "branch.mispredict_penalty=2,4,6",
];

fn sweep_args<'a>(program: &'a str, trace: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", program, trace, "--core", "rocket"];
    a.extend(GRID);
    a.extend(more);
    a
}

#[test]
fn emitted_commands_run_anywhere_and_collect_equals_the_local_sweep() {
    let dir = scratch("emit");
    let trace = dir.join("crc32.rtrace");
    let (program, t) = ("programs/bin/crc32-rv32-O2.elf", trace.to_str().unwrap());
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    ok(&retrace(&sweep_args(
        program,
        t,
        &["--emit-commands", o, "--chunk", "5", "--", "4096", "3"],
    )));
    // The trace does not exist yet: the record script makes it.
    let status = Command::new("sh")
        .arg(out.join("commands/record.sh"))
        .status()
        .unwrap();
    assert!(status.success());
    let lines = std::fs::read_to_string(out.join("commands/estimate.txt")).unwrap();
    assert_eq!(lines.lines().count(), 5, "25 points, 5 per line");
    // Collect before anything ran names every point, and prints no table.
    let early = retrace(&["sweep", "collect", o]);
    assert_ne!(early.status.code(), Some(0));
    assert!(early.stdout.is_empty());
    let err = String::from_utf8_lossy(&early.stderr);
    assert!(err.contains("25 of 25 points have no result"), "{err}");
    for line in lines.lines() {
        let s = Command::new("sh").args(["-c", line]).status().unwrap();
        assert!(s.success(), "{line}");
    }
    let collected = ok(&retrace(&["sweep", "collect", o, "--format", "json"]));
    let local = ok(&retrace(&sweep_args(program, t, &["--format", "json"])));
    assert_eq!(figures(&collected), figures(&local));
    assert_eq!(figures(&local)["points"].as_array().unwrap().len(), 24);
    // The same sweep again: nothing left to run.
    ok(&retrace(&sweep_args(
        program,
        t,
        &["--emit-commands", o, "--", "4096", "3"],
    )));
    let lines = std::fs::read_to_string(out.join("commands/estimate.txt")).unwrap();
    assert_eq!(lines.trim(), "", "{lines}");
    // Another grid into the same directory is refused.
    let other = retrace(&[
        "sweep",
        program,
        t,
        "--core",
        "rocket",
        "--set",
        "icache.size=512",
        "--emit-commands",
        o,
    ]);
    assert_eq!(other.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&other.stderr).contains("another sweep"));
    let none = retrace(&["sweep", "collect", dir.to_str().unwrap()]);
    assert_eq!(none.status.code(), Some(125));
    assert_eq!(String::from_utf8_lossy(&none.stderr).lines().count(), 1);
}

/// Whether a Slurm cluster answers here (scripts/slurm-local.sh).
fn slurm(test: &str) -> bool {
    if !runs("sbatch") {
        return skip_or_fail(
            test,
            "sbatch is not installed (Debian: apt-get install slurmctld slurmd slurm-client munge; then scripts/slurm-local.sh)",
        );
    }
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .is_ok_and(|o| {
            let s = String::from_utf8_lossy(&o.stdout);
            s.contains("idle") || s.contains("mix") || s.contains("alloc")
        });
    up || skip_or_fail(
        test,
        "no Slurm node is up (start one with scripts/slurm-local.sh)",
    )
}

fn job_of(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let rest = text
        .split("submitted job ")
        .nth(1)
        .unwrap_or_else(|| panic!("no job id in: {text}"));
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .to_string()
}

fn wait_for(job: &str) {
    let start = Instant::now();
    loop {
        let out = Command::new("squeue")
            .args(["-h", "-o", "%i", "-j", job])
            .output()
            .unwrap();
        if !out.status.success() || out.stdout.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "job {job} still queued"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_slurm_sweep_of_two_programs_equals_the_local_one() {
    if !slurm("a_slurm_sweep_of_two_programs_equals_the_local_one") {
        return;
    }
    let dir = scratch("slurm");
    for (name, program, chunk, args) in [
        (
            "crc32",
            "programs/bin/crc32-rv32-O2.elf",
            "1",
            vec!["4096", "2"],
        ),
        (
            "exprparse",
            "programs/bin/exprparse-rv32-O2.elf",
            "4",
            vec![],
        ),
    ] {
        let trace = dir.join(format!("{name}.rtrace"));
        let out = dir.join(name);
        let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
        let mut more = vec!["--slurm", o, "--chunk", chunk, "--wait", "--format", "json"];
        if !args.is_empty() {
            more.push("--");
            more.extend(args.iter().copied());
        }
        // Recording is a job of its own that the array waits for.
        let submitted = retrace(&sweep_args(program, t, &more));
        let collected = ok(&submitted);
        assert!(
            String::from_utf8_lossy(&submitted.stderr).contains("after recording job"),
            "{}",
            String::from_utf8_lossy(&submitted.stderr)
        );
        assert!(trace.exists());
        let local = ok(&retrace(&sweep_args(program, t, &["--format", "json"])));
        assert_eq!(figures(&collected), figures(&local), "{name}");
        assert_eq!(figures(&local)["points"].as_array().unwrap().len(), 24);
    }
}

#[test]
fn a_cancelled_task_is_named_and_a_rerun_completes_the_table() {
    if !slurm("a_cancelled_task_is_named_and_a_rerun_completes_the_table") {
        return;
    }
    let dir = scratch("cancel");
    let trace = dir.join("crc32.rtrace");
    let program = "programs/bin/crc32-rv32-O2.elf";
    ok(&retrace(&[
        "record",
        program,
        "-o",
        trace.to_str().unwrap(),
    ]));
    let out = dir.join("out");
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    // One task at a time, so task 20 is still pending when cancelled.
    let submitted = retrace(&sweep_args(
        program,
        t,
        &["--slurm", o, "--array-limit", "1"],
    ));
    ok(&submitted);
    let job = job_of(&submitted.stderr);
    let cancel = Command::new("scancel")
        .arg(format!("{job}_20"))
        .status()
        .unwrap();
    assert!(cancel.success());
    wait_for(&job);
    let incomplete = retrace(&["sweep", "collect", o]);
    let err = String::from_utf8_lossy(&incomplete.stderr);
    assert_ne!(incomplete.status.code(), Some(0), "{err}");
    assert!(incomplete.stdout.is_empty(), "no partial table");
    assert!(err.contains("1 of 25 points have no result"), "{err}");
    assert!(
        err.contains("point 20 (") && err.contains(&format!("job {job} task 20")),
        "{err}"
    );
    // The same command again submits only point 20.
    let rerun = retrace(&sweep_args(
        program,
        t,
        &["--slurm", o, "--wait", "--format", "json"],
    ));
    let collected = ok(&rerun);
    assert!(
        String::from_utf8_lossy(&rerun.stderr).contains("1 tasks for 1 of 25 points"),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    let local = ok(&retrace(&sweep_args(program, t, &["--format", "json"])));
    assert_eq!(figures(&collected), figures(&local));
}
