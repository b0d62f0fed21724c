//! External tools (QEMU, GNU binutils, the cross compiler) as oracles.
//! A test that needs one skips with a printed reason when it is missing,
//! unless `RETRACE_REQUIRE_TOOLS=1` (as CI sets it), which makes the
//! missing tool a failure: CI must never pass by skipping.

use std::process::{Command, Stdio};

/// Whether `RETRACE_REQUIRE_TOOLS=1`.
pub fn required() -> bool {
    std::env::var("RETRACE_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// A set of programs one kind of test needs, and how to install them.
#[derive(Clone, Copy, Debug)]
pub struct Tools {
    /// The executables, found on `PATH`; each must run `--version`.
    pub bins: &'static [&'static str],
    /// How to install them, for the skip message.
    pub install: &'static str,
}

/// QEMU for both XLENs, retrace's run-time oracle.
pub const QEMU: Tools = Tools {
    bins: &["qemu-system-riscv32", "qemu-system-riscv64"],
    install: "Debian: apt-get install qemu-system-misc",
};

/// GNU objdump and as for RISC-V, the disassembly oracle.
pub const BINUTILS: Tools = Tools {
    bins: &["riscv64-unknown-elf-objdump", "riscv64-unknown-elf-as"],
    install: "Debian: apt-get install binutils-riscv64-unknown-elf",
};

/// GNU objdump for RISC-V alone.
pub const OBJDUMP: Tools = Tools {
    bins: &["riscv64-unknown-elf-objdump"],
    install: "Debian: apt-get install binutils-riscv64-unknown-elf",
};

impl Tools {
    /// Why the tools cannot be used, or `None` when they all start.
    pub fn missing(&self) -> Option<String> {
        self.bins
            .iter()
            .find(|b| !runs(b))
            .map(|bin| format!("{bin} is not installed ({})", self.install))
    }

    /// For a `#[test]`: true when the tools are there; otherwise prints why
    /// `test` skips and returns false, or panics under
    /// `RETRACE_REQUIRE_TOOLS=1`.
    pub fn available(&self, test: &str) -> bool {
        match self.missing() {
            None => true,
            Some(reason) => skip_or_fail(test, &reason),
        }
    }
}

/// For a condition other than a missing program (a missing library, say):
/// prints why `test` skips and returns false, or panics under
/// `RETRACE_REQUIRE_TOOLS=1`.
pub fn skip_or_fail(test: &str, reason: &str) -> bool {
    assert!(!required(), "{test}: {reason}, and RETRACE_REQUIRE_TOOLS=1");
    eprintln!("{test}: skipping: {reason}");
    false
}

/// Whether `bin --version` starts and succeeds.
pub fn runs(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The cross compiler with picolibc, and objdump to read what it built.
pub const CROSS_GCC: Tools = Tools {
    bins: &["riscv64-unknown-elf-gcc", "riscv64-unknown-elf-objdump"],
    install: "Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf",
};
