//! FTP: log in. After the 220 banner the user name is sent (the response time starts), a
//! 331 asks for the password, a 230 passes; a 4xx or 5xx reply refuses.

use super::{Connection, Failure, Outcome};

/// Most of the replies a probe keeps while it waits for a complete line.
const REPLY_LIMIT: usize = 8192;

#[derive(Debug)]
enum State {
    Connecting,
    AwaitingBanner,
    UserSent { at: u64 },
    PasswordSent { at: u64 },
}

#[derive(Debug)]
pub struct FtpProbe {
    user: String,
    password: String,
    state: State,
    reply: Vec<u8>,
}

/// The reply code of the first complete line of an FTP reply, and how many bytes it used.
fn reply_code(buf: &[u8]) -> Option<(u16, usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let code = std::str::from_utf8(buf.get(..3)?).ok()?.parse().ok()?;
    Some((code, end + 2))
}

impl FtpProbe {
    pub fn new(user: &str, password: &str) -> Self {
        Self {
            user: user.to_owned(),
            password: password.to_owned(),
            state: State::Connecting,
            reply: Vec::new(),
        }
    }

    pub fn step(&mut self, now: u64, conn: &mut dyn Connection) -> Option<Outcome> {
        if let State::Connecting = self.state {
            if !conn.ready() {
                return None;
            }
            self.state = State::AwaitingBanner;
        }
        conn.recv_into(&mut self.reply);
        self.reply.truncate(REPLY_LIMIT);
        while let Some((code, used)) = reply_code(&self.reply) {
            self.reply.drain(..used);
            let next = match (&self.state, code) {
                (State::AwaitingBanner, 220) => {
                    let line = format!("USER {}\r\n", self.user);
                    State::UserSent { at: now }.after_sending(conn, &line)
                }
                (State::UserSent { at }, 331) => {
                    let line = format!("PASS {}\r\n", self.password);
                    State::PasswordSent { at: *at }.after_sending(conn, &line)
                }
                (State::UserSent { at } | State::PasswordSent { at }, 230) => {
                    return Some(Outcome::passed(*at, now));
                }
                (_, c) if c >= 400 => return Some(Outcome::Failed(Failure::LoginRefused(c))),
                _ => continue, // continuation lines, 1xx
            };
            match next {
                Some(state) => self.state = state,
                None => return Some(Outcome::Failed(Failure::SendFailed)),
            }
        }
        (!conn.may_recv()).then_some(Outcome::Failed(Failure::Closed))
    }
}

impl State {
    /// This state once `line` is sent, or `None` when the connection refused it.
    fn after_sending(self, conn: &mut dyn Connection, line: &str) -> Option<Self> {
        conn.send(line.as_bytes()).then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::FakeConnection;
    use super::*;

    #[test]
    fn replies_are_read_line_by_line() {
        assert_eq!(
            reply_code(b"220 (vsFTPd 3.0.3)\r\n331 Please"),
            Some((220, 20))
        );
        assert_eq!(reply_code(b"230 Login"), None, "incomplete line");
        assert_eq!(reply_code(b"xx\r\n"), None);
    }

    #[test]
    fn logs_in_and_times_from_the_user_name() {
        let mut p = FtpProbe::new("mon", "secret");
        let mut conn = FakeConnection::established();
        conn.incoming = b"220-Welcome\r\n220 ready\r\n".to_vec();
        assert_eq!(p.step(100, &mut conn), None);
        assert_eq!(conn.sent, b"USER mon\r\n");
        conn.incoming = b"331 Password?\r\n".to_vec();
        assert_eq!(p.step(300, &mut conn), None);
        assert!(conn.sent.ends_with(b"PASS secret\r\n"));
        conn.incoming = b"230 In\r\n".to_vec();
        assert_eq!(
            p.step(450, &mut conn),
            Some(Outcome::Passed { response_us: 350 })
        );
        let mut p = FtpProbe::new("mon", "bad");
        conn.incoming = b"220 ready\r\n530 Login incorrect.\r\n".to_vec();
        assert_eq!(
            p.step(0, &mut conn),
            Some(Outcome::Failed(Failure::LoginRefused(530)))
        );
    }
}
