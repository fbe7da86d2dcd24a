//! Parsing then lowering (names, types, shapes) on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        if let Ok(program) = gpm_syntax::parse(src) {
            let _ = gpm_ir::lower(&program);
        }
    }
});
