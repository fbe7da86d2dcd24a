//! Data loading against the example GP classifier and the multi-class GP: the first byte picks
//! the model and the format (JSON or CSV), the rest is the file.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn models() -> &'static [gpmc::Checked; 2] {
    static M: OnceLock<[gpmc::Checked; 2]> = OnceLock::new();
    M.get_or_init(|| {
        let load = |name: &str| {
            let path = format!("{}/../models/{name}", env!("CARGO_MANIFEST_DIR"));
            let src = std::fs::read_to_string(&path).expect("example model");
            gpmc::check(name, &src).expect("example models check")
        };
        [load("gp_classification.gpm"), load("multiclass_gp.gpm")]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    let model = &models()[(how & 1) as usize].model;
    if how & 2 == 0 {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
            let _ = gpmc::data::from_json_value(model, &v);
        }
    } else {
        let _ = gpmc::data::from_csv(model, "fuzz.csv", rest);
    }
});
