//! The SYN proxy: under a SYN flood (or always, by `set lb parameter -synCookie`) a worker
//! answers a client's SYN to a VIP itself, with a SYN cookie as its sequence number, and
//! keeps nothing. Only the client's ACK, proving the cookie, creates a flow; the engine then
//! opens the service's connection with the client's own ISN and, once the service answers,
//! shifts the sequence numbers between the two for the life of the flow (as DPVS's synproxy).
//!
//! The handshakes carry the MSS only: window scaling, SACK and timestamps are not
//! negotiated on such connections (a window of at most 64 KB per round trip).

use crate::flow::{Numbering, Side};
use crate::syncookie;
use crate::tables::SynCookies;
use crate::verdict::{DropReason, Verdict};
use crate::wire::{self, Ipv4, Proto};

use super::flush::Leg;
use super::{OUTBOX, OUTBOX_RESERVED, Worker};

/// A cookie lives up to two steps of `syncookie`: ACKs are checked that long after the last.
const COOKIE_ACKS_S: u64 = 128;
/// Once a flood starts them, cookies go on this long after the pressure was last seen: a
/// flood's SYNs would otherwise take every place its expired flows free.
const COOKIE_HOLD_S: u64 = 10;

impl Worker {
    /// Half the embryonic budget is spent: a SYN flood (cookies start, and half-open flows
    /// are swept sooner).
    #[inline]
    pub(super) fn under_pressure(&self) -> bool {
        self.flows.embryonic() * 2 >= self.embryonic_limit
    }

    /// Cookies answer new SYNs: always, or from the moment half the embryonic budget is
    /// spent until [`COOKIE_HOLD_S`] after it no longer is.
    fn cookies_on(&mut self, now_s: u64) -> bool {
        if self.tables.syn_cookies == SynCookies::UnderPressure && self.under_pressure() {
            self.cookies_until_s = now_s + COOKIE_HOLD_S;
        }
        self.cookies_wanted(now_s)
    }

    /// What [`Worker::cookies_on`] answers, without starting the hold (only pressure starts
    /// it, and pressure makes this true anyway).
    #[inline(always)]
    fn cookies_wanted(&self, now_s: u64) -> bool {
        match self.tables.syn_cookies {
            SynCookies::Always => true,
            SynCookies::UnderPressure => self.under_pressure() || now_s < self.cookies_until_s,
            SynCookies::Off => false,
        }
    }

    /// For a TCP frame of no flow to a VIP: a SYN answered with a cookie, or an ACK whose
    /// cookie opens the flow. `None`: the ordinary path takes the frame. Inline, the common
    /// case: a SYN while cookies are off and no flood would turn them on.
    #[inline(always)]
    pub(super) fn syn_proxy(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frame: &[u8],
        ip: &Ipv4,
    ) -> Option<Verdict> {
        let opening = ip.proto == Proto::Tcp && ip.tcp.syn && !ip.tcp.ack && !ip.tcp.rst;
        if opening && !self.cookies_wanted(now_ms / 1000) {
            return None;
        }
        self.syn_proxy_otherwise(now_ms, in_port, frame, ip)
    }

    /// [`Worker::syn_proxy`] past its common case.
    fn syn_proxy_otherwise(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frame: &[u8],
        ip: &Ipv4,
    ) -> Option<Verdict> {
        if ip.proto != Proto::Tcp || ip.tcp.rst {
            return None;
        }
        let now_s = now_ms / 1000;
        let opening = ip.tcp.syn && !ip.tcp.ack;
        // The common cases first, before any lookup: a SYN while cookies are off, a segment
        // while none was sent lately.
        if opening && !self.cookies_on(now_s) {
            return None;
        }
        let recent = now_s.saturating_sub(self.last_cookie_s) < COOKIE_ACKS_S;
        if !opening && (!ip.tcp.ack || ip.tcp.syn || ip.tcp.fin || !recent) {
            return None;
        }
        let vs = self.tables.vserver_for(ip.dst, ip.proto, ip.dst_port)?;
        let tuple = ((ip.src, ip.src_port), (ip.dst, ip.dst_port));
        // Cookies count wall-clock time, as their keys outlive the daemon: a restarted one
        // (its own clock at zero) takes the cookies its predecessor gave.
        let cookie_s = self.wall_ms(now_ms) / 1000;
        let n = wire::tcp_numbers(frame, ip)?;
        if opening {
            if !self.tables.vservers[vs as usize].enabled {
                return None;
            }
            if self.outbox.len() >= OUTBOX - OUTBOX_RESERVED {
                return Some(Verdict::Drop(DropReason::TxFull)); // the client sends it again
            }
            let cookie = syncookie::make(tuple, n.seq, wire::tcp_mss(frame, ip), cookie_s);
            let leg = Leg {
                port: in_port,
                mac: wire::src_mac(frame),
                ours: tuple.1,
                theirs: tuple.0,
            };
            let ack = n.seq.wrapping_add(1);
            // A zero window: the client sends no data before the service's side is open (a
            // window update then lets it), so none is lost meanwhile.
            self.queue_frame(leg, |buf, macs, leg| {
                let addrs = (leg.ours, leg.theirs);
                wire::tcp_handshake(buf, macs, addrs, (cookie, Some(ack)), 0, 1460)
            });
            self.last_cookie_s = now_s;
            self.stats.syn_cookies_sent += 1;
            return Some(Verdict::Consumed);
        }
        // The handshake's ACK is numbered ISN + 1; if it was lost, the client's zero-window
        // probe (numbered one less, RFC 9293 §3.8.6.1) proves the cookie just as well.
        let cookie = n.ack.wrapping_sub(1);
        let Some((isn, mss)) = [n.seq.wrapping_sub(1), n.seq]
            .into_iter()
            .find_map(|isn| syncookie::check(tuple, isn, cookie, cookie_s).map(|mss| (isn, mss)))
        else {
            self.stats.syn_cookies_failed += 1;
            return None;
        };
        self.stats.syn_cookies_valid += 1;
        let proxy = Numbering::AwaitingService {
            cookie,
            client_isn: isn,
            service_isn: 0,
        };
        Some(
            match self.new_flow(now_ms, in_port, frame, ip, Some(proxy)) {
                Ok(slot) => {
                    self.number_service_side(slot, now_ms);
                    self.open_service_side(slot, mss);
                    // The ACK (and any data it carries, which the client sends again) is not
                    // forwarded: the service has not seen a SYN yet.
                    Verdict::Consumed
                }
                Err(reason) => {
                    // No flow after all (no service UP, table full): the client learns at once.
                    self.reset_unknown(in_port, frame, ip);
                    Verdict::Drop(reason)
                }
            },
        )
    }

    /// Picks the ISN of the engine's SYN to the service, from the flow's SNAT tuple.
    fn number_service_side(&mut self, slot: u32, now_ms: u64) {
        let Some(flow) = self.flows.get(slot).copied() else {
            return;
        };
        if let Numbering::AwaitingService {
            cookie, client_isn, ..
        } = flow.numbering
        {
            let wall_ms = self.wall_ms(now_ms);
            let service_isn = syncookie::service_isn((flow.snip, flow.service_addr), wall_ms);
            self.set_numbering(
                slot,
                Numbering::AwaitingService {
                    cookie,
                    client_isn,
                    service_isn,
                },
            );
        }
    }

    /// The engine's SYN to the service of a flow the proxy opened.
    fn open_service_side(&mut self, slot: u32, mss: u16) {
        let Some(flow) = self.flows.get(slot).copied() else {
            return;
        };
        let Numbering::AwaitingService { service_isn, .. } = flow.numbering else {
            return;
        };
        if let (_, Some(server)) = self.legs(&flow) {
            self.queue_frame(server, |buf, macs, leg| {
                let addrs = (leg.ours, leg.theirs);
                wire::tcp_handshake(buf, macs, addrs, (service_isn, None), u16::MAX, mss)
            });
        }
    }

    /// A frame of a flow the proxy opened, before both sides are joined: the service's
    /// SYN+ACK is answered here (and fixes the shift); anything else waits. `None` once
    /// the flow is joined (the frame is forwarded, shifted).
    pub(super) fn proxy_step(
        &mut self,
        frame: &[u8],
        ip: &Ipv4,
        slot: u32,
        side: Side,
    ) -> Option<Verdict> {
        let flow = self.flows.get(slot)?;
        let Numbering::AwaitingService {
            cookie,
            client_isn,
            service_isn,
        } = flow.numbering
        else {
            return None;
        };
        let toward_service = service_isn.wrapping_sub(client_isn);
        let Some(n) = wire::tcp_numbers(frame, ip) else {
            return Some(Verdict::Drop(DropReason::Malformed));
        };
        if side == Side::Client {
            // The client asks again (its ACK, a window probe): so does the engine, in case
            // its SYN or the service's answer was lost.
            self.open_service_side(slot, syncookie::mss_of(cookie));
            return Some(Verdict::Drop(DropReason::AwaitingService));
        }
        let flow = *flow;
        if ip.tcp.rst {
            // Refused: the client gets the reset, numbered as its side expects.
            let toward_client = n.seq.wrapping_sub(cookie.wrapping_add(1));
            self.set_numbering(
                slot,
                Numbering::Shifted {
                    toward_client,
                    toward_service,
                },
            );
            return None;
        }
        if ip.tcp.ack && !ip.tcp.syn {
            // A bare ACK to a SYN: the service still holds the tuple (TIME_WAIT) and asks
            // whether this is the old connection. No: a reset numbered by its ACK ends the old
            // one (RFC 9293 §3.10.7.3), and the SYN goes again.
            let (_, server) = self.legs(&flow);
            if let Some(server) = server {
                self.queue_frame(server, |buf, macs, leg| {
                    wire::tcp_rst(buf, macs, leg.ours, leg.theirs, n.ack, None)
                });
            }
            self.open_service_side(slot, syncookie::mss_of(cookie));
            return Some(Verdict::Drop(DropReason::AwaitingService));
        }
        if !(ip.tcp.syn && ip.tcp.ack) {
            return Some(Verdict::Drop(DropReason::AwaitingService));
        }
        self.set_numbering(
            slot,
            Numbering::Shifted {
                toward_client: n.seq.wrapping_sub(cookie),
                toward_service,
            },
        );
        self.track(slot, Side::Server, ip.tcp);
        let (client, server) = self.legs(&flow);
        if let Some(server) = server {
            let numbers = (n.ack, n.seq.wrapping_add(1));
            self.queue_frame(server, |buf, macs, leg| {
                wire::tcp_ack(buf, macs, (leg.ours, leg.theirs), numbers, u16::MAX)
            });
        }
        // The client may send now, as much as the service's window takes.
        let numbers = (cookie.wrapping_add(1), n.ack.wrapping_sub(toward_service));
        self.queue_frame(client, |buf, macs, leg| {
            wire::tcp_ack(buf, macs, (leg.ours, leg.theirs), numbers, n.window)
        });
        Some(Verdict::Consumed)
    }

    fn set_numbering(&mut self, slot: u32, numbering: Numbering) {
        self.flows.set_numbering(slot, numbering);
    }
}
