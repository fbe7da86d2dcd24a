//! The parser on any text: a program or a diagnostic, never a panic or a stack overflow.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let _ = gpm_syntax::parse(src);
    }
});
