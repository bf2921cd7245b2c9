//! The secret the engine's sequence numbers toward services
//! ([`crate::syncookie::service_isn`]) and its SYN cookies are keyed with, kept in a file
//! beside the configuration. Services hold a SNAT tuple in TIME_WAIT for a minute and take a
//! new SYN on it only if its sequence number is above the old connection's; a restarted
//! daemon with the same secret and the wall clock continues every tuple's numbers above its
//! predecessor's, where a new random secret would put half of them below. A client whose SYN
//! the old daemon answered with a cookie completes its handshake with the new one.

use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The file's name in the configuration's directory.
pub const FILE_NAME: &str = "isn.secret";

const LEN: usize = 32;

/// Where the secret of a daemon whose configuration is `config` is kept.
pub fn path_for(config: &Path) -> PathBuf {
    config
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(FILE_NAME)
}

/// The secret kept at `path`; made from the kernel's random numbers and kept there (mode
/// 0600, written whole then renamed) when the file is missing or is not one.
pub fn load_or_make(path: &Path) -> io::Result<[u64; 4]> {
    match std::fs::read(path) {
        Ok(bytes) => {
            if let Ok(bytes) = <[u8; LEN]>::try_from(bytes.as_slice()) {
                return Ok(words(bytes));
            }
            log::warn!(target: "control",
                "{}: not a sequence-number secret ({} bytes); making a new one",
                path.display(),
                bytes.len()
            );
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut bytes = [0u8; LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut name = path.as_os_str().to_owned();
    name.push(".new");
    let fresh = PathBuf::from(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&fresh)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    std::fs::rename(&fresh, path)?;
    log::info!(target: "control", "made the sequence-number secret {}", path.display());
    Ok(words(bytes))
}

fn words(bytes: [u8; LEN]) -> [u64; 4] {
    std::array::from_fn(|i| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
        u64::from_le_bytes(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fl-isn-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_secret_made_once_is_read_back_by_the_next_start() {
        let dir = scratch("kept");
        let path = path_for(&dir.join("ns.conf"));
        let first = load_or_make(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only the daemon's user reads it");
        assert_eq!(load_or_make(&path).unwrap(), first);
        assert_ne!(first, [0; 4]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_is_not_a_secret_is_replaced() {
        let dir = scratch("bad");
        let path = path_for(&dir.join("ns.conf"));
        std::fs::write(&path, b"short").unwrap();
        let made = load_or_make(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), LEN);
        assert_eq!(load_or_make(&path).unwrap(), made);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_that_cannot_be_written_is_an_error_not_a_panic() {
        let path = Path::new("/proc/fl-no-such-dir").join(FILE_NAME);
        assert!(load_or_make(&path).is_err());
    }
}
