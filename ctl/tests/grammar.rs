//! `help` and completion come from the same command table as the parser.

use ctl::grammar::{COMMANDS, complete, help, parse_line};

#[test]
fn help_lists_every_command_and_details_one() {
    let all = help(None);
    assert_eq!(all.lines().count(), COMMANDS.len());
    assert!(
        all.contains("add lb vserver <name> <serviceType> [<IPAddress>] [<port>]"),
        "{all}"
    );
    let one = help(Some("add lb monitor"));
    assert!(
        one.starts_with("add lb monitor <monitorName> <type>"),
        "{one}"
    );
    assert!(
        one.contains("-resptimeout") && one.contains("Probe fails after this long"),
        "{one}"
    );
    assert!(
        one.contains("[-interval <1-20940> [SEC | MSEC | MIN]]"),
        "{one}"
    );
    let verb = help(Some("bind"));
    assert!(verb.lines().all(|l| l.starts_with("bind ")), "{verb}");
}

#[test]
fn completion_offers_verbs_objects_and_options() {
    assert_eq!(complete("sh"), ["show"]);
    assert_eq!(complete("add lb v"), ["vserver"]);
    assert_eq!(complete("add lb m"), ["metricTable", "monitor"]);
    assert_eq!(complete("bind lb vserver vs1 svc1 -w"), ["-weight"]);
    assert!(complete("add service s1 10.0.0.1 HTTP 80 -").contains(&"-maxClient".to_owned()));
}

#[test]
fn every_declared_command_parses_from_its_own_synopsis_words() {
    // Each table entry is reachable: its verb and object words select exactly it.
    for spec in COMMANDS {
        let line = format!("{} {}", spec.verb, spec.object.words().join(" "));
        match parse_line(&line) {
            Ok(_) => {}
            Err(e) => assert!(
                e.to_string().contains("Required argument missing")
                    || e.to_string().contains("option to unset"),
                "{line}: {e}"
            ),
        }
    }
}
