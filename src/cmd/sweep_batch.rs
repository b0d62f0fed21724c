//! `retrace sweep` beyond one machine: the grid written as plain commands
//! (`--emit-commands DIR`) or submitted to Slurm as a job array (`--slurm
//! DIR`), and `retrace sweep collect DIR`, which gathers the results into
//! the report a local sweep prints.
//!
//! Everything lives in DIR, which every node must see: `sweep.json` (the
//! plan: program, trace, base core, the grid), `commands/` (one shell line
//! per task), `results/point-NNNN.json` (each point's `retrace estimate
//! --format json`, renamed into place only when complete, so a killed task
//! leaves no result that looks whole), `logs/` and `submissions.json`
//! (which Slurm job and array task ran which points, so `collect` can name
//! a missing point's log). Point 0 is the base core; points 1… are the
//! grid in order. Running the same sweep again into DIR submits only the
//! points without a result, and records the trace only if it is missing.

use super::common::shell_word;
use super::estimate::EstimateRow;
use super::sweep::{print_sweep, sweep_report, Args, Grid};
use crate::report::FormatArgs;
use crate::status::{tag, Status};
use anyhow::{anyhow, Context};
use retrace_estimate::Fidelity;
use retrace_timing::Override;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Arguments of `retrace sweep collect`.
#[derive(clap::Args, Debug)]
pub struct CollectArgs {
    /// The sweep's directory (--slurm DIR or --emit-commands DIR).
    pub dir: PathBuf,
    /// Output format, as a local sweep's.
    #[command(flatten)]
    pub output: FormatArgs,
}

/// The plan of a batch sweep: what a local sweep would have been given,
/// and the absolute paths the tasks use.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Plan {
    /// The program as given (shown in the report).
    program: String,
    /// The trace as given.
    trace: String,
    /// The base core as given.
    core: String,
    fidelity: String,
    keys: Vec<String>,
    /// Each point's overrides as `key=value`; point 0 (the base) has none.
    points: Vec<Vec<String>>,
    /// The program's arguments for its recording.
    program_args: Vec<String>,
    /// Absolute paths for the tasks.
    program_path: String,
    trace_path: String,
    core_spec: String,
}

/// One submission to Slurm: its jobs and which points each task ran.
#[derive(Serialize, Deserialize, Debug)]
struct Submission {
    /// The estimate array's job id.
    job: String,
    /// The recording job it depends on, if one was needed.
    record_job: Option<String>,
    /// The points of each array task, by task id.
    tasks: Vec<Vec<usize>>,
}

const PLAN: &str = "sweep.json";
const SUBMISSIONS: &str = "submissions.json";

fn bad(e: anyhow::Error) -> anyhow::Error {
    tag(e, Status::BadInput)
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("{}: cannot make it absolute", path.display()))
}

fn result_path(dir: &Path, point: usize) -> PathBuf {
    dir.join("results").join(format!("point-{point:04}.json"))
}

impl Plan {
    fn new(args: &Args, grid: &Grid) -> anyhow::Result<Plan> {
        let program = args.program.as_ref().expect("required by clap");
        let trace = args.trace.as_ref().expect("required by clap");
        let core = args.core.clone().expect("required by clap");
        // A core file is read by the tasks, maybe elsewhere: by its
        // absolute path. A preset is a name.
        let core_spec = if core.ends_with(".toml") || core.contains('/') {
            absolute(Path::new(&core))?.display().to_string()
        } else {
            core.clone()
        };
        let mut points = vec![Vec::new()];
        points.extend(
            grid.points
                .iter()
                .map(|p| p.iter().map(Override::to_string).collect()),
        );
        Ok(Plan {
            program: program.display().to_string(),
            trace: trace.display().to_string(),
            core,
            fidelity: Fidelity::from(args.fidelity).to_string(),
            keys: grid.keys.clone(),
            points,
            program_args: args.program_args.clone(),
            program_path: absolute(program)?.display().to_string(),
            trace_path: absolute(trace)?.display().to_string(),
            core_spec,
        })
    }

    fn read(dir: &Path) -> anyhow::Result<Plan> {
        let path = dir.join(PLAN);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad(anyhow!(
                "{}: cannot read the sweep's plan ({e}); DIR is the directory given to `retrace sweep --slurm DIR` or `--emit-commands DIR`",
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            bad(anyhow!(
                "{}: not a sweep plan written by retrace ({e})",
                path.display()
            ))
        })
    }

    /// The shell line that estimates `point` and puts its result in place.
    fn command(&self, exe: &str, dir: &Path, point: usize) -> String {
        let mut words = vec![
            exe.to_string(),
            "estimate".into(),
            self.program_path.clone(),
            self.trace_path.clone(),
            "--core".into(),
            self.core_spec.clone(),
        ];
        for o in &self.points[point] {
            words.push("--set".into());
            words.push(o.clone());
        }
        words.extend(["--fidelity".into(), self.fidelity.clone()]);
        words.extend(["--format".into(), "json".into()]);
        let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
        let result = result_path(dir, point).display().to_string();
        let part = format!("{result}.part");
        format!(
            "{} > {} && mv -f {} {}",
            line.join(" "),
            shell_word(&part),
            shell_word(&part),
            shell_word(&result)
        )
    }

    /// The shell line that records the trace.
    fn record_command(&self, exe: &str) -> String {
        let mut words = vec![
            exe.to_string(),
            "record".into(),
            self.program_path.clone(),
            "-o".into(),
            self.trace_path.clone(),
        ];
        if !self.program_args.is_empty() {
            words.push("--".into());
            words.extend(self.program_args.iter().cloned());
        }
        let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
        line.join(" ")
    }
}

/// Write or check DIR's plan, and say which points still lack a result.
fn prepare(args: &Args, grid: &Grid, dir: &Path) -> anyhow::Result<(Plan, Vec<usize>)> {
    if args.chunk == 0 {
        return Err(bad(anyhow!(
            "--chunk 0: a task estimates at least one point"
        )));
    }
    let plan = Plan::new(args, grid)?;
    for sub in ["results", "logs", "commands"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
            bad(anyhow!(
                "{}: cannot create it: {e}",
                dir.join(sub).display()
            ))
        })?;
    }
    let path = dir.join(PLAN);
    if path.exists() {
        let old = Plan::read(dir)?;
        if old != plan {
            return Err(bad(anyhow!(
                "{} holds another sweep (its program, trace, core or grid differ); give a new directory, or remove this one",
                dir.display()
            )));
        }
    } else {
        std::fs::write(&path, serde_json::to_string_pretty(&plan)?)
            .map_err(|e| bad(anyhow!("{}: cannot write: {e}", path.display())))?;
    }
    let missing = (0..plan.points.len())
        .filter(|&p| !result_path(dir, p).exists())
        .collect();
    Ok((plan, missing))
}

fn exe() -> anyhow::Result<String> {
    Ok(std::env::current_exe()
        .context("cannot find retrace's own executable")?
        .display()
        .to_string())
}

/// The tasks: `chunk` points each, as one shell line.
fn task_lines(plan: &Plan, exe: &str, dir: &Path, points: &[usize], chunk: usize) -> Vec<String> {
    points
        .chunks(chunk)
        .map(|c| {
            c.iter()
                .map(|&p| plan.command(exe, dir, p))
                .collect::<Vec<_>>()
                .join(" && ")
        })
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) -> anyhow::Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| bad(anyhow!("{}: cannot write: {e}", path.display())))
}

/// `--emit-commands DIR`.
pub fn emit_commands(args: &Args, grid: &Grid, dir: &Path) -> anyhow::Result<ExitCode> {
    let (plan, missing) = prepare(args, grid, dir)?;
    let exe = exe()?;
    let record = dir.join("commands").join("record.sh");
    let needs_record = !Path::new(&plan.trace_path).exists();
    let mut lines = vec!["#!/bin/sh".to_string(), "set -e".to_string()];
    if needs_record {
        lines.push(plan.record_command(&exe));
    }
    write_lines(&record, &lines)?;
    let estimate = dir.join("commands").join("estimate.txt");
    write_lines(
        &estimate,
        &task_lines(&plan, &exe, dir, &missing, args.chunk),
    )?;
    eprintln!(
        "{} of {} points to estimate, {} per line of {}{}\nrun them, e.g.:\n  sh {} && parallel < {}\nthen: retrace sweep collect {}",
        missing.len(),
        plan.points.len(),
        args.chunk,
        estimate.display(),
        if needs_record {
            format!("; the trace is recorded first by {}", record.display())
        } else {
            String::new()
        },
        shell_word(&record.display().to_string()),
        shell_word(&estimate.display().to_string()),
        shell_word(&dir.display().to_string()),
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `sbatch` with `args`; its `--parsable` output is the job id.
fn sbatch(args: &[String]) -> anyhow::Result<String> {
    let out = Command::new("sbatch").args(args).output().map_err(|e| {
        bad(anyhow!(
            "cannot run sbatch ({e}): --slurm needs Slurm's client commands on a machine of the cluster (Debian: slurm-client); --emit-commands DIR writes the same tasks for any other batch system"
        ))
    })?;
    if !out.status.success() {
        return Err(bad(anyhow!(
            "sbatch {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // `--parsable` prints `id` or `id;cluster`.
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad(anyhow!("sbatch printed no job id: {text:?}")));
    }
    Ok(id)
}

fn read_submissions(dir: &Path) -> Vec<Submission> {
    std::fs::read_to_string(dir.join(SUBMISSIONS))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// `--slurm DIR`.
pub fn submit(args: &Args, grid: &Grid, dir: &Path) -> anyhow::Result<ExitCode> {
    let (plan, missing) = prepare(args, grid, dir)?;
    if missing.is_empty() {
        eprintln!(
            "every point of the sweep in {} has its result: nothing to submit",
            dir.display()
        );
        return collect(CollectArgs {
            dir: dir.to_path_buf(),
            output: args.output,
        });
    }
    let exe = exe()?;
    let dir = absolute(dir)?;
    let mut submissions = read_submissions(&dir);
    let n = submissions.len() + 1;
    let common: Vec<String> = args
        .partition
        .iter()
        .flat_map(|p| ["--partition".to_string(), p.clone()])
        .chain(["--parsable".to_string()])
        .collect();

    let record_job = if Path::new(&plan.trace_path).exists() {
        None
    } else {
        let script = dir.join("commands").join(format!("record-{n}.sbatch"));
        write_lines(
            &script,
            &[
                "#!/bin/bash".into(),
                "set -euo pipefail".into(),
                plan.record_command(&exe),
            ],
        )?;
        let mut a = common.clone();
        a.extend([
            "--job-name=retrace-record".into(),
            format!(
                "--output={}",
                dir.join("logs").join("record-%j.out").display()
            ),
            script.display().to_string(),
        ]);
        Some(sbatch(&a)?)
    };

    let points: Vec<Vec<usize>> = missing.chunks(args.chunk).map(<[usize]>::to_vec).collect();
    let lines = task_lines(&plan, &exe, &dir, &missing, args.chunk);
    let tasks_file = dir.join("commands").join(format!("estimate-{n}.txt"));
    write_lines(&tasks_file, &lines)?;
    let script = dir.join("commands").join(format!("estimate-{n}.sbatch"));
    write_lines(
        &script,
        &[
            "#!/bin/bash".into(),
            "set -euo pipefail".into(),
            "# One line of the task file per array task.".into(),
            format!(
                "sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {} | bash -euo pipefail",
                shell_word(&tasks_file.display().to_string())
            ),
        ],
    )?;
    let mut a = common.clone();
    let limit = args
        .array_limit
        .map(|l| format!("%{l}"))
        .unwrap_or_default();
    a.push(format!("--array=0-{}{limit}", lines.len() - 1));
    a.push("--job-name=retrace-sweep".into());
    a.push(format!(
        "--output={}",
        dir.join("logs").join("estimate-%A_%a.out").display()
    ));
    if let Some(r) = &record_job {
        a.push(format!("--dependency=afterok:{r}"));
    }
    a.push(script.display().to_string());
    let job = sbatch(&a)?;
    submissions.push(Submission {
        job: job.clone(),
        record_job: record_job.clone(),
        tasks: points,
    });
    std::fs::write(
        dir.join(SUBMISSIONS),
        serde_json::to_string_pretty(&submissions)?,
    )
    .map_err(|e| {
        bad(anyhow!(
            "{}: cannot write: {e}",
            dir.join(SUBMISSIONS).display()
        ))
    })?;
    eprintln!(
        "submitted job {job}: {} tasks for {} of {} points{}",
        lines.len(),
        missing.len(),
        plan.points.len(),
        match &record_job {
            Some(r) => format!(", after recording job {r}"),
            None => String::new(),
        }
    );
    if !args.wait {
        eprintln!(
            "when it ends: retrace sweep collect {}",
            shell_word(&dir.display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let jobs: Vec<&String> = record_job.iter().chain([&job]).collect();
    while queued(&jobs)? {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    collect(CollectArgs {
        dir: dir.clone(),
        output: args.output,
    })
}

/// Whether any of `jobs` is still pending or running.
fn queued(jobs: &[&String]) -> anyhow::Result<bool> {
    let list: Vec<&str> = jobs.iter().map(|j| j.as_str()).collect();
    let out = Command::new("squeue")
        .args(["-h", "-o", "%i", "-j", &list.join(",")])
        .output()
        .map_err(|e| bad(anyhow!("cannot run squeue ({e}) to wait for the jobs")))?;
    // squeue fails for job ids it no longer knows: those have ended.
    Ok(out.status.success() && !String::from_utf8_lossy(&out.stdout).trim().is_empty())
}

/// The estimate report a task wrote.
#[derive(Deserialize)]
struct TaskResult {
    estimates: Vec<EstimateRow>,
}

/// Why a point has no result, for people: its task, job and log.
fn why_missing(dir: &Path, submissions: &[Submission], point: usize) -> String {
    let found = submissions.iter().rev().find_map(|s| {
        s.tasks
            .iter()
            .position(|t| t.contains(&point))
            .map(|task| (s, task))
    });
    let Some((s, task)) = found else {
        return "never submitted (run the commands of --emit-commands, or submit with --slurm)"
            .into();
    };
    let log = dir
        .join("logs")
        .join(format!("estimate-{}_{task}.out", s.job));
    let still = queued(&[&s.job]).unwrap_or(false);
    let last = std::fs::read_to_string(&log).ok().and_then(|t| {
        t.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    });
    match (still, last) {
        (true, _) => format!("job {} task {task} is still queued or running", s.job),
        (false, Some(line)) => format!(
            "job {} task {task} ended without it; log {}: {line}",
            s.job,
            log.display()
        ),
        (false, None) => format!(
            "job {} task {task} ended without it and left no log at {} (cancelled before it started, or the record job {} failed: see {})",
            s.job,
            log.display(),
            s.record_job.as_deref().unwrap_or("-"),
            dir.join("logs").display()
        ),
    }
}

/// `retrace sweep collect DIR`.
pub fn collect(args: CollectArgs) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    let plan = Plan::read(dir)?;
    let submissions = read_submissions(dir);
    let mut rows: Vec<Option<EstimateRow>> = Vec::with_capacity(plan.points.len());
    let mut missing = Vec::new();
    for p in 0..plan.points.len() {
        let path = result_path(dir, p);
        let row = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<TaskResult>(&t).ok())
            .and_then(|r| r.estimates.into_iter().next());
        if row.is_none() {
            missing.push(p);
        }
        rows.push(row);
    }
    if !missing.is_empty() {
        let mut lines = vec![format!(
            "the sweep in {} is incomplete: {} of {} points have no result",
            dir.display(),
            missing.len(),
            plan.points.len()
        )];
        for &p in &missing {
            let settings = if p == 0 {
                format!("the base core {}", plan.core)
            } else {
                plan.points[p].join(" ")
            };
            lines.push(format!(
                "  point {p} ({settings}): {}",
                why_missing(dir, &submissions, p)
            ));
        }
        lines.push(
            "run the same `retrace sweep … --slurm DIR` again to submit only these (or, with --emit-commands, run the commands again)".into(),
        );
        return Err(anyhow!("{}", lines.join("\n")));
    }
    let parse_points: Vec<Vec<Override>> = plan
        .points
        .iter()
        .map(|p| p.iter().map(|o| Override::parse(o)).collect())
        .collect::<Result<_, _>>()
        .map_err(|e| bad(anyhow!("{}: {e}", dir.join(PLAN).display())))?;
    let mut rows: Vec<EstimateRow> = rows.into_iter().flatten().collect();
    let seconds = rows.iter().map(|r| r.seconds).sum();
    let base = rows.remove(0);
    let fidelity = plan
        .fidelity
        .parse()
        .map_err(|e: String| bad(anyhow!("{}: {e}", dir.join(PLAN).display())))?;
    let report = sweep_report(
        plan.program,
        plan.trace,
        fidelity,
        plan.keys,
        base,
        parse_points.into_iter().skip(1).zip(rows).collect(),
        seconds,
    );
    print_sweep(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
