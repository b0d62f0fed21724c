//! `retrace disasm` against GNU objdump: every instruction line (address,
//! encoding, mnemonic, operands, `<sym+off>` and `# addr <sym>` comments)
//! must be identical, for every ELF in `programs/bin/` and for a small
//! program compiled here for soft and hard float, one trial per file
//! (`disasm_cli::sort-rv32-O2`, `disasm_cli::compiled-rv64gc`). Without the tools a trial is reported
//! ignored with the reason, unless `RETRACE_REQUIRE_TOOLS=1` (CI), where
//! that is a failure. Every mismatch of a file is collected before failing.

use retrace_testkit::programs::{example_programs, scratch_dir};
use retrace_testkit::tools::{CROSS_GCC, OBJDUMP};
use retrace_testkit::trials::{self, Failed};
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Every instruction line of `retrace disasm` and objdump for one file.
fn compare(elf: &Path) -> Result<(), Failed> {
    let mut problems = Vec::new();
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
    let theirs = Command::new(OBJDUMP.bins[0])
        .arg("-d")
        .arg(elf)
        .output()
        .unwrap();
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
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} mismatches; first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    )
    .into())
}

/// A small program with a loop, calls, a jump table and some single- and
/// double-precision arithmetic (library calls under soft float, F/D
/// instructions under hard float), compiled for one `-march` into `dir`.
fn compile(dir: &Path, march: &str, mabi: &str, name: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(
        &src,
        "int tab[8]; static int f(int x){return x*3+1;}\n\
         volatile float fv = 1.5f; volatile double dv = 2.5;\n\
         static double g(int i){float x = fv * (float)i + 0.25f; return x < dv ? dv / x : dv * x - (double)fv;}\n\
         int main(int c, char **v){int s=0; for(int i=0;i<c*100;i++){s+=f(i)^tab[i&7]; if(s>1000) s/=7;}\n\
         s += (int)g(c) + (unsigned)(fv * dv);\n\
         switch(c){case 1: return s; case 2: return s+1; case 3: return 9; case 4: return 11; default: return 0;}}\n",
    )
    .unwrap();
    let out = dir.join(format!("{name}.elf"));
    let gcc = CROSS_GCC.bins[0];
    let ok = Command::new(gcc)
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
    assert!(ok, "{gcc} could not build the test program");
    out
}

fn main() {
    let mut list = Vec::new();
    for p in example_programs() {
        list.push(trials::needing(
            format!("disasm_cli::{}", p.name),
            OBJDUMP,
            move || compare(&p.path),
        ));
    }
    let dir = scratch_dir("disasm");
    for (march, mabi, name) in [
        ("rv32imac", "ilp32", "compiled-rv32"),
        ("rv64imac", "lp64", "compiled-rv64"),
        ("rv32imafc", "ilp32f", "compiled-rv32imafc"),
        ("rv32imafdc", "ilp32d", "compiled-rv32imafdc"),
        ("rv64gc", "lp64d", "compiled-rv64gc"),
    ] {
        let dir = dir.clone();
        list.push(trials::needing(
            format!("disasm_cli::{name}"),
            CROSS_GCC,
            move || compare(&compile(&dir, march, mabi, name)),
        ));
    }
    trials::run(list, move || {
        let _ = std::fs::remove_dir_all(&dir);
    })
}
