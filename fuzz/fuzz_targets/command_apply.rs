//! Random command sequences through the grammar and `Config::apply_all`: never a panic, and
//! a rejected command leaves the configuration exactly as it was (all or nothing).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut config = ctl::conf::Config::default();
    for line in text.lines().take(200) {
        let Ok(commands) = ctl::grammar::parse_line(line) else {
            continue;
        };
        let before = config.clone();
        if config.apply_all(&commands).is_err() {
            assert_eq!(
                config, before,
                "a rejected line changed the configuration: {line:?}"
            );
        }
    }
});
