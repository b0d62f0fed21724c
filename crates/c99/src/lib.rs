//! # c99 (retrace's stand-in)
//!
//! The floating-point arithmetic of retrace's simulator is Berkeley
//! SoftFloat, through the `softfloat-wrapper` and `softfloat-sys` crates.
//! `softfloat-sys` takes the C99 "fast" integer types of its C signatures
//! from the `c99` crate, whose build script compiles and runs a C program
//! with CMake and make to print them. This crate replaces it (the
//! workspace's `[patch.crates-io]`), so building retrace needs no CMake:
//! the types are fixed here for each C library, as `<stdint.h>` defines
//! them — they must match, since they cross the FFI boundary (a mismatch
//! would garble rounding modes and results: the floating-point tests,
//! `fpedge`'s tens of thousands of cases against QEMU, would fail).

#![no_std]

#[cfg(not(any(target_env = "gnu", target_env = "musl")))]
compile_error!("c99 stand-in: the <stdint.h> fast types are written down for glibc and musl only; add this target's");

/// `uint_fast8_t`: `unsigned char` in glibc and musl.
#[allow(non_camel_case_types)]
pub type uint_fast8_t = u8;

// glibc: the 16-, 32- and 64-bit fast types are `long` on 64-bit targets,
// `int` (16 and 32 bits) and `long long` (64) on 32-bit ones.
#[cfg(all(target_env = "gnu", target_pointer_width = "64"))]
mod fast {
    #![allow(non_camel_case_types)]
    pub type int_fast32_t = i64;
    pub type uint_fast32_t = u64;
}
#[cfg(all(target_env = "gnu", target_pointer_width = "32"))]
mod fast {
    #![allow(non_camel_case_types)]
    pub type int_fast32_t = i32;
    pub type uint_fast32_t = u32;
}
// musl: `int32_t` on every target.
#[cfg(target_env = "musl")]
mod fast {
    #![allow(non_camel_case_types)]
    pub type int_fast32_t = i32;
    pub type uint_fast32_t = u32;
}

pub use fast::{int_fast32_t, uint_fast32_t};

/// `int_fast64_t`: 64 bits everywhere.
#[allow(non_camel_case_types)]
pub type int_fast64_t = i64;
/// `uint_fast64_t`: 64 bits everywhere.
#[allow(non_camel_case_types)]
pub type uint_fast64_t = u64;
