//! Aggregation (seed 000, embodiment 2) on the example programs: the plan
//! picks loops the machine code shows are Z1.

use retrace_estimate::aggregate::{Level, LoopPlan};
use retrace_isa::Class;
use retrace_program::{Elf, Program};
use retrace_testkit::programs::example_programs;

#[test]
fn plans_name_continue_tests_of_z1_loops() {
    let mut with_loops = 0;
    for p in example_programs() {
        let elf = Elf::parse(&p.bytes()).unwrap();
        let program = Program::analyse(&elf).unwrap();
        assert!(LoopPlan::new(&program, Level::None).is_empty());
        let plan = LoopPlan::new(&program, Level::Loops);
        with_loops += usize::from(!plan.is_empty());
        for l in &plan.loops {
            let inst = program.table.code().get(l.site).unwrap();
            assert_eq!(inst.class(), Class::Branch, "{}: {}", p.name, l.site);
            let nest = program.loops(l.function);
            let lp = nest.get(l.loop_id);
            assert!(lp.z1 && lp.calls == 0 && lp.branches == 1, "{}", p.name);
            assert_eq!(lp.exit_branches, vec![l.site]);
        }
        let sites = plan.sites();
        assert!(sites.windows(2).all(|w| w[0].0 < w[1].0), "{}", p.name);
    }
    assert!(
        with_loops >= 10,
        "only {with_loops} programs have a Z1 loop"
    );
}
