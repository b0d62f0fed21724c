//! `retrace disasm` against GNU objdump: every instruction line (address,
//! encoding, mnemonic, operands, `<sym+off>` and `# addr <sym>` comments)
//! must be identical, for every ELF in `programs/bin/` and for a small
//! program compiled here. Without the tools the test is skipped with a
//! message, unless `RETRACE_REQUIRE_TOOLS=1` (CI), where that is a failure.
//! Every mismatch of every file is collected before failing.

use std::path::{Path, PathBuf};
use std::process::Command;

const OBJDUMP: &str = "riscv64-unknown-elf-objdump";
const GCC: &str = "riscv64-unknown-elf-gcc";

fn have(tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok();
    if !ok {
        let required = std::env::var("RETRACE_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "RETRACE_REQUIRE_TOOLS=1 but {tool} is not installed"
        );
        eprintln!("skipping: {tool} is not installed");
    }
    ok
}

/// Instruction lines: `addr:<TAB>hex-encoding<spaces><TAB>text`.
fn insn_lines(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| {
            let Some((addr, rest)) = l.split_once(":\t") else {
                return false;
            };
            let Some((enc, _)) = rest.split_once('\t') else {
                return false;
            };
            let enc = enc.trim_end();
            !addr.trim().is_empty()
                && addr.trim().chars().all(|c| c.is_ascii_hexdigit())
                && !enc.is_empty()
                && enc.chars().all(|c| c.is_ascii_hexdigit())
        })
        .map(str::to_string)
        .collect()
}

fn compare(elf: &Path, problems: &mut Vec<String>) {
    let ours = Command::new(env!("CARGO_BIN_EXE_retrace"))
        .arg("disasm")
        .arg(elf)
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "retrace disasm {} failed",
        elf.display()
    );
    let theirs = Command::new(OBJDUMP).arg("-d").arg(elf).output().unwrap();
    let (a, b) = (
        insn_lines(&String::from_utf8_lossy(&theirs.stdout)),
        insn_lines(&String::from_utf8_lossy(&ours.stdout)),
    );
    if a.len() != b.len() {
        problems.push(format!(
            "{}: objdump {} lines, retrace {}",
            elf.display(),
            a.len(),
            b.len()
        ));
    }
    for (x, y) in a.iter().zip(&b) {
        if x != y {
            problems.push(format!(
                "{}:\n  objdump: {x}\n  retrace: {y}",
                elf.display()
            ));
        }
    }
}

#[test]
fn disasm_matches_objdump() {
    if !have(OBJDUMP) {
        return;
    }
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/bin"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "elf"));
    if have(GCC) {
        let dir = std::env::temp_dir().join(format!("retrace-disasm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("t.c");
        std::fs::write(
            &src,
            "int tab[8]; static int f(int x){return x*3+1;}\n\
             int main(int c, char **v){int s=0; for(int i=0;i<c*100;i++){s+=f(i)^tab[i&7]; if(s>1000) s/=7;}\n\
             switch(c){case 1: return s; case 2: return s+1; case 3: return 9; case 4: return 11; default: return 0;}}\n",
        )
        .unwrap();
        for (march, mabi, name) in [
            ("rv32imac", "ilp32", "t32.elf"),
            ("rv64imac", "lp64", "t64.elf"),
        ] {
            let out = dir.join(name);
            let ok = Command::new(GCC)
                .args([format!("-march={march}"), format!("-mabi={mabi}")])
                .args([
                    "-mcmodel=medany",
                    "--specs=picolibc.specs",
                    "--oslib=semihost",
                    "--crt0=semihost",
                    "-O2",
                ])
                .args([
                    "-Wl,--defsym=__flash=0x80000000",
                    "-Wl,--defsym=__flash_size=0x200000",
                ])
                .args([
                    "-Wl,--defsym=__ram=0x80200000",
                    "-Wl,--defsym=__ram_size=0x200000",
                    "-o",
                ])
                .arg(&out)
                .arg(&src)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "{GCC} could not build the test program");
            files.push(out);
        }
    }
    assert!(!files.is_empty(), "no ELF to compare");
    let mut problems = Vec::new();
    for f in &files {
        compare(f, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "{} mismatches over {} files; first ones:\n{}",
        problems.len(),
        files.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
