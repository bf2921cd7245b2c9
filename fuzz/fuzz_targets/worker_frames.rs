//! A sequence of arbitrary frames through a worker with a fixed configuration (the datapath
//! tests' one, SYN cookies under pressure or always), its neighbours known: never a panic,
//! and the flow table's counts stay within its size.
#![no_main]

use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

use engine::tables::{ServiceIds, Tables};
use engine::worker::Crew;
use libfuzzer_sys::fuzz_target;

const LB_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
const SNIP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const CONFIG: &str = "
add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add service d1 198.18.0.11 DNS 53
add lb vserver web HTTP 198.18.0.100 80 -lbMethod LEASTCONNECTION
add lb vserver dns DNS 198.18.0.100 53 -lbMethod ROUNDROBIN
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver dns d1
";

fn tables(always: bool) -> Arc<Tables> {
    static BUILT: OnceLock<[Arc<Tables>; 2]> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let build = |extra: &str| {
            let (config, errors) = ctl::conf::replay_text(&format!("{CONFIG}{extra}"));
            assert!(errors.is_empty(), "{errors:?}");
            let mut tables = Tables::build(&config, &mut ServiceIds::default(), 1);
            tables.attach_persistence(&mut std::collections::HashMap::new(), 1024);
            Arc::new(tables)
        };
        [build(""), build("set lb parameter -synCookie ALWAYS\n")]
    });
    Arc::clone(&built[usize::from(always)])
}

/// Backend `n`'s ARP reply to the SNIP.
fn arp_reply(n: u8) -> Vec<u8> {
    let mac = [2, 0, 0, 0, 1, n];
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&LB_MAC);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[198, 18, 0, 10 + n]);
    f.extend_from_slice(&LB_MAC);
    f.extend_from_slice(&SNIP.octets());
    f.resize(60, 0);
    f
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut data)) = data.split_first() else {
        return;
    };
    let capacity = 64;
    let Some(mut worker) = Crew::one(&[LB_MAC], capacity, 64, &tables(mode & 1 == 1))
        .workers
        .pop()
    else {
        return;
    };
    let mut now = 1_000u64;
    worker.housekeeping(now);
    worker.drain_outbox(|_, _| {});
    for n in 1..=2 {
        worker.process(now, 0, &mut arp_reply(n));
    }
    // Frames as [time step, length hi, length lo, bytes…].
    while let [step, hi, lo, rest @ ..] = data {
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(rest.len());
        let mut frame = rest[..len].to_vec();
        data = &rest[len..];
        now += u64::from(*step) * 16;
        worker.process(now, 0, &mut frame);
        if step & 0x80 != 0 {
            worker.housekeeping(now);
        }
        worker.drain_outbox(|_, f| assert!(f.len() <= 1514));
        let flows = worker.flows();
        assert!(flows.len() <= capacity && flows.embryonic() <= flows.len());
    }
});
