//! `retrace report`: the HTML page loads in a real headless browser
//! (Debian's chromium) with no console message, its screenshot is not
//! blank, it fetches nothing, and the numbers in the page are the report's
//! JSON and `retrace estimate`'s.

mod common;
use common::{retrace, succeeded as ok};

use retrace_testkit::tools::{runs, skip_or_fail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = "programs/bin/crc32-rv32-O2.elf";

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `data-value`s of one table's column, in row order.
fn column(dom: &str, table: &str, key: &str) -> Vec<String> {
    let start = dom
        .find(&format!("data-table=\"{table}\""))
        .unwrap_or_else(|| panic!("no table {table}"));
    let end = start + dom[start..].find("</table>").unwrap();
    let needle = format!("data-key=\"{key}\" data-value=\"");
    dom[start..end]
        .match_indices(&needle)
        .map(|(i, _)| {
            let rest = &dom[start + i + needle.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The segments of the CPI chart: per bar, its label and each segment's
/// `(part, value)`, by part name (as JSON objects come back).
fn cpi_bars(dom: &str) -> Vec<(String, Vec<(String, String)>)> {
    let start = dom.find("data-chart=\"cpi\"").expect("no CPI chart");
    let end = start + dom[start..].find("</svg>").unwrap();
    let attr = |s: &str, name: &str| -> String {
        let needle = format!("{name}=\"");
        let i = s.find(&needle).unwrap() + needle.len();
        s[i..i + s[i..].find('"').unwrap()].to_string()
    };
    dom[start..end]
        .split("<g data-bar=")
        .skip(1)
        .map(|bar| {
            let label = attr(&format!("data-bar={bar}"), "data-bar");
            let mut segments: Vec<(String, String)> = bar
                .split("<rect ")
                .skip(1)
                .filter(|r| r.contains("data-part="))
                .map(|r| (attr(r, "data-part"), attr(r, "data-value")))
                .collect();
            segments.sort();
            (label, segments)
        })
        .collect()
}

fn chromium(args: &[&str], page: &Path) -> Output {
    Command::new("chromium")
        .args(["--headless=new", "--no-sandbox", "--disable-gpu"])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap()
}

#[test]
fn the_page_loads_cleanly_and_shows_the_json_figures() {
    let dir = scratch();
    let trace = dir.join("crc32.rtrace");
    ok(&retrace(&[
        "record",
        PROGRAM,
        "-o",
        trace.to_str().unwrap(),
    ]));
    let page = dir.join("report.html");
    let t = trace.to_str().unwrap();
    let json: Value = serde_json::from_str(&ok(&retrace(&[
        "report",
        PROGRAM,
        t,
        "--core",
        "rocket",
        "--core",
        "picorv32",
        "--sweep",
        "icache.size=256..1024*2",
        "--sweep",
        "branch.predictor=bimodal,gshare",
        "--sweep",
        "branch.history_bits=8",
        "-o",
        page.to_str().unwrap(),
        "--format",
        "json",
    ])))
    .unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "a report runs no script");
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(attr), "the page fetches nothing: {attr}");
    }
    let estimate: Value = serde_json::from_str(&ok(&retrace(&[
        "estimate", PROGRAM, t, "--core", "rocket", "--core", "picorv32", "--format", "json",
    ])))
    .unwrap();
    let cycles: Vec<String> = estimate["estimates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cycles"].to_string())
        .collect();
    let report_cycles: Vec<String> = json["estimates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cycles"].to_string())
        .collect();
    assert_eq!(report_cycles, cycles);
    let sweep_cycles: Vec<String> = json["sweep"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cycles"].to_string())
        .collect();
    assert_eq!(sweep_cycles.len(), 6);

    // The page itself: from the file as written, and as a browser sees it.
    let mut doms = vec![("file", html.clone())];
    if !runs("chromium") {
        skip_or_fail(
            "the_page_loads_cleanly_and_shows_the_json_figures",
            "chromium is not installed (Debian: apt-get install chromium)",
        );
    } else {
        let dom = chromium(&["--dump-dom"], &page);
        assert!(dom.status.success());
        doms.push(("browser", String::from_utf8_lossy(&dom.stdout).into_owned()));
        let shot = dir.join("report.png");
        let out = chromium(
            &[
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1100,1400",
                &format!("--screenshot={}", shot.display()),
            ],
            &page,
        );
        assert!(out.status.success());
        let log = String::from_utf8_lossy(&out.stderr);
        let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
        assert!(console.is_empty(), "console messages: {console:?}");
        assert!(not_blank(&shot), "the screenshot is blank");
    }
    let profile: Value = serde_json::from_str(&ok(&retrace(&[
        "profile", PROGRAM, t, "--core", "rocket", "--format", "json",
    ])))
    .unwrap();
    let exclusive: Vec<String> = profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["exclusive_cycles"].to_string())
        .collect();
    let lost: Vec<String> = profile["costliest_branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["mispredict_cycles"].to_string())
        .collect();
    assert!(!lost.is_empty(), "rocket mispredicts crc32's branches");
    let line_cycles: Vec<u64> = json["hottest_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["cycles"].as_u64().unwrap())
        .collect();
    assert!(
        line_cycles.windows(2).all(|w| w[0] >= w[1]),
        "{line_cycles:?}"
    );
    assert!(line_cycles.iter().sum::<u64>() <= json["profile"]["cycles"].as_u64().unwrap());
    assert!(
        json["hottest_lines"][0]["source"]
            .as_str()
            .unwrap()
            .contains("crc32.c:"),
        "{}",
        json["hottest_lines"][0]
    );
    // Each core's CPI stack: the parts sum to the estimate.
    let stacks = json["cpi"].as_array().unwrap();
    assert_eq!(stacks.len(), 2);
    for (s, e) in stacks.iter().zip(json["estimates"].as_array().unwrap()) {
        let parts = s["cpi"].as_object().unwrap();
        let sum: u64 = parts.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(sum, e["cycles"].as_u64().unwrap(), "{s}");
        assert_eq!(s["cycles"], e["cycles"], "{s}");
    }
    let want_bars: Vec<(String, Vec<(String, String)>)> = stacks
        .iter()
        .map(|s| {
            let parts = s["cpi"].as_object().unwrap();
            let mut segments: Vec<(String, String)> = parts
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            segments.sort();
            (s["core"].as_str().unwrap().to_string(), segments)
        })
        .collect();
    for (from, dom) in doms {
        assert_eq!(cpi_bars(&dom), want_bars, "{from}");
        assert_eq!(column(&dom, "estimates", "cycles"), cycles, "{from}");
        assert_eq!(column(&dom, "sweep", "cycles"), sweep_cycles, "{from}");
        assert_eq!(
            column(&dom, "functions", "exclusive cycles"),
            exclusive,
            "{from}"
        );
        assert_eq!(column(&dom, "branches", "cycles lost"), lost, "{from}");
        let lines: Vec<u64> = column(&dom, "lines", "cycles")
            .iter()
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(lines, line_cycles, "{from}");
        let cpi: Vec<f64> = column(&dom, "estimates", "CPI")
            .iter()
            .map(|v| v.parse().unwrap())
            .collect();
        let json_cpi: Vec<f64> = json["estimates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["cpi"].as_f64().unwrap())
            .collect();
        assert_eq!(cpi, json_cpi, "{from}");
    }
}

/// Whether a PNG has more than a sliver of non-background pixels.
fn not_blank(png: &Path) -> bool {
    let decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels = bytes.len() / channels;
    let inked = bytes
        .chunks(channels)
        .filter(|p| p.iter().take(3).any(|&c| c < 200))
        .count();
    inked * 100 > pixels
}

#[test]
fn a_report_without_a_trace_records_one_and_bad_input_is_one_line() {
    let dir = scratch();
    let page = dir.join("r2.html");
    let json: Value = serde_json::from_str(&ok(&retrace(&[
        "report",
        PROGRAM,
        "--core",
        "ideal",
        "-o",
        page.to_str().unwrap(),
        "--format",
        "json",
        "--",
        "4096",
        "2",
    ])))
    .unwrap();
    assert!(json["estimates"][0]["cycles"].as_u64().unwrap() > 0);
    assert!(page.exists());
    for (args, words) in [
        (vec!["report", PROGRAM, "--core", "ideal"], "-o FILE"),
        (
            vec!["report", PROGRAM, "--core", "nosuch", "-o", "x.html"],
            "unknown core",
        ),
        (
            vec![
                "report",
                PROGRAM,
                "Cargo.toml",
                "--core",
                "ideal",
                "-o",
                "/tmp/x.html",
            ],
            "Cargo.toml",
        ),
    ] {
        let out = retrace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(words), "{err}");
    }
}
