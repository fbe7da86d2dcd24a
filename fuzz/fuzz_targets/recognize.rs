//! The whole of `gpmc check`: parsing, lowering, recognition and certification of every
//! factor, the schedule, and the diagnostics rendered as the CLI renders them.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        match gpmc::check("fuzz.gpm", src) {
            Ok(c) => {
                let _ = gpmc::report::text(&c);
            }
            Err(f) => {
                let _ = f.render();
                for r in f.reports() {
                    let _ = format!("{r:?}");
                }
            }
        }
    }
});
