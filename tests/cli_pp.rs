//! `retrace pp` and `retrace cfg`: the reports are typed rows, and the text
//! shows what the rows hold (no text is rendered apart from them).

use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("retrace runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

const NQUEENS: &str = "programs/bin/nqueens-rv32-O2.elf";
const CRC32_O0: &str = "programs/bin/crc32-rv32-O0.elf";

/// Every name, count and test the text's loop and region lines show is a
/// field of the JSON rows: the text is rendered from them.
#[test]
fn pp_json_rows_carry_everything_the_text_shows() {
    for (elf, func) in [(NQUEENS, "first"), (CRC32_O0, "make_table")] {
        let args = ["pp", elf, "--function", func, "--loops", "--regions"];
        let text = stdout(&retrace(&args));
        let mut json_args = args.to_vec();
        json_args.extend_from_slice(&["--format", "json"]);
        let j: serde_json::Value = serde_json::from_str(&stdout(&retrace(&json_args))).unwrap();
        assert_eq!(j["function"], func);
        let loops = j["loops"].as_array().unwrap();
        assert!(!loops.is_empty(), "{elf} {func} has loops");
        for l in loops {
            let join = |field: &str| {
                l[field]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let line = format!(
                "L{} header {} ({} blocks, latches [{}], {} exit edges, exit branches [{}], {} branches, {} calls)",
                l["id"],
                l["header_symbol"].as_str().unwrap(),
                l["blocks"],
                join("latch_symbols"),
                l["exit_edges"],
                join("exit_branch_symbols"),
                l["branches"],
                l["calls"]
            );
            assert!(text.contains(&line), "{line:?} not in\n{text}");
            if let Some(t) = l.get("trip_test") {
                let op = t["op"].as_str().unwrap();
                let at = t["branch"]["symbol"].as_str().unwrap();
                assert!(
                    text.contains(&format!("trip-count test {op} at {at}: ")),
                    "{t}"
                );
                for o in t["operands"].as_array().unwrap() {
                    assert!(o["kind"].is_string(), "{o}");
                }
            }
        }
        for r in j["regions"].as_array().unwrap() {
            let line = format!(
                "R{} branch {} merge {} ({}, {} blocks)",
                r["id"],
                r["branch_symbol"].as_str().unwrap(),
                r["merge_symbol"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                r["blocks"]
            );
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
        assert!(j["irreducible_edges"].is_array());
        for pp in j["partial_programs"].as_array().unwrap() {
            let last = pp["last_symbol"].as_str().unwrap();
            assert!(text.contains(&format!("@{last}")) || text.contains(&format!("({last})")));
        }
        assert!(
            j["table_size"].as_u64().unwrap()
                >= j["partial_programs"].as_array().unwrap().len() as u64
        );
    }
}

/// A function without loops or regions says so, in the text and as empty
/// lists.
#[test]
fn pp_sections_of_a_function_without_loops_say_none() {
    let args = ["pp", NQUEENS, "--function", "exit", "--loops", "--regions"];
    let text = stdout(&retrace(&args));
    assert!(text.contains("\nloops of exit:\n  none\n"), "{text}");
    let mut json_args = args.to_vec();
    json_args.extend_from_slice(&["--format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&retrace(&json_args))).unwrap();
    assert_eq!(j["loops"].as_array().unwrap().len(), 0);
}

/// `retrace cfg` names terminators and prints addresses in hex, never in
/// Rust's debug formatting; recognised jump tables say so.
#[test]
fn cfg_listing_and_dot_print_terminators_with_hex_addresses() {
    let text = stdout(&retrace(&["cfg", NQUEENS, "--function", "main"]));
    assert!(!text.contains("Addr("), "{text}");
    assert!(!text.contains('{'), "{text}");
    let call = text
        .lines()
        .find(|l| l.contains(" call "))
        .unwrap_or_else(|| panic!("no call in {text}"));
    // `call NAME (0x…)`
    let (_, after) = call.split_once(" call ").unwrap();
    let paren = after.split_whitespace().nth(1).unwrap();
    assert!(paren.starts_with("(0x") && paren.ends_with(')'), "{call}");

    // __d_vfprintf's dispatch on the conversion character is a jump table
    // (its address hoisted out of the format loop, as GCC does at -O2).
    let text = stdout(&retrace(&[
        "cfg",
        "programs/bin/crc32-rv32-O2.elf",
        "--function",
        "__d_vfprintf",
    ]));
    assert!(text.contains("indirect-jump (jump table)"), "{text}");
    assert!(
        !text.contains("indirect-jump exits"),
        "every jump resolved: {text}"
    );
    let dot = stdout(&retrace(&[
        "cfg",
        "programs/bin/crc32-rv32-O2.elf",
        "--function",
        "__d_vfprintf",
        "--dot",
    ]));
    assert!(dot.contains("indirect-jump (jump table)"), "{dot}");
    assert!(!dot.contains("table: true"), "{dot}");
}
