//! Every example program in `programs/bin/` (found by listing it, both
//! XLENs, every optimisation level) analyses into a consistent table
//! without warnings: one trial per program (`every_program::sort-rv32-O2`),
//! run in parallel by libtest's pool.

mod common;

use common::inconsistencies;
use retrace_program::{Elf, Program};
use retrace_testkit::programs::{example_programs, ExampleProgram};
use retrace_testkit::trials::{self, all_ok, Failed, Trial};

fn check(p: &ExampleProgram) -> Result<(), Failed> {
    let elf = Elf::parse(&p.bytes()).map_err(|e| format!("{}: {e}", p.path.display()))?;
    let analysed = Program::analyse(&elf).map_err(|e| format!("{}: {e}", p.path.display()))?;
    let mut bad = inconsistencies(&analysed.table);
    if !analysed.warnings.is_empty() {
        bad.push(format!("warnings {:?}", analysed.warnings));
    }
    all_ok(bad)
}

fn main() {
    let progs = example_programs();
    let list = progs
        .into_iter()
        .map(|p| Trial::test(format!("every_program::{}", p.name), move || check(&p)))
        .collect();
    trials::run(list, || {})
}
