//! ns.conf replay: any text loads without a panic, and what it loaded saves into a file
//! that loads back to the same configuration.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (config, _errors) = ctl::conf::replay_text(&text);
    let saved = ctl::conf::render(&config, "fuzz");
    let (again, errors) = ctl::conf::replay_text(&saved);
    assert!(
        errors.is_empty(),
        "the saved file does not load: {errors:?}\n{saved}"
    );
    assert_eq!(again, config, "saved and loaded back differs:\n{saved}");
});
