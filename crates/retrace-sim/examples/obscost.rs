use retrace_isa::{Flow, Inst};
use retrace_sim::*;
struct Null;
impl Observer for Null {
    const RETIRE: bool = false;
}
struct Br(u64, u64);
impl Observer for Br {
    const RETIRE: bool = false;
    #[inline(always)]
    fn branch(&mut self, _h: HartId, _pc: u64, _i: &Inst, t: bool, _x: u64) {
        self.0 += 1;
        self.1 += t as u64;
    }
    #[inline(never)]
    fn jump(&mut self, _h: HartId, _pc: u64, _i: &Inst, f: Flow, t: u64) {
        if f == Flow::Return {
            self.1 ^= t
        }
    }
}
struct Mem(Vec<u64>);
impl Observer for Mem {
    const RETIRE: bool = false;
    #[inline(always)]
    fn memory(&mut self, _h: HartId, a: u64) {
        self.0.push(a);
        if self.0.len() == 1 << 14 {
            self.0.clear()
        }
    }
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let elf = retrace_program::Elf::parse(&std::fs::read(&a[2]).unwrap()).unwrap();
    let console = Console {
        stdout: Box::new(std::io::sink()),
        stderr: Box::new(std::io::sink()),
        stdin: Box::new(std::io::empty()),
        is_tty: [false; 3],
    };
    let mut m = Machine::new(
        &elf,
        &MachineConfig::default(),
        HostConfig::default(),
        console,
    )
    .unwrap();
    let r = match a[1].as_str() {
        "none" => m.run(None, &mut ()),
        "null" => m.run(None, &mut Null),
        "br" => {
            let mut o = Br(0, 0);
            let r = m.run(None, &mut o);
            eprintln!("{} {}", o.0, o.1);
            r
        }
        "mem" => {
            let mut o = Mem(Vec::with_capacity(1 << 14));
            let r = m.run(None, &mut o);
            eprintln!("{}", o.0.len());
            r
        }
        _ => panic!(),
    };
    eprintln!("{:?}", r.instructions);
}
