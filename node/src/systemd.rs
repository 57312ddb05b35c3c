//! systemd's readiness protocol (`sd_notify`): when started by a `Type=notify` unit, systemd
//! names a datagram socket in `NOTIFY_SOCKET`; the node sends `READY=1` once it serves its API
//! and `STOPPING=1` when it begins to shut down. Without the variable nothing is sent.

use std::io;
use std::os::unix::net::UnixDatagram;

/// Sends `state` (`READY=1`, `STOPPING=1`, …) to the socket `NOTIFY_SOCKET` names, if any;
/// whether it was sent.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os("NOTIFY_SOCKET") {
        Some(path) => notify_to(&path.to_string_lossy(), state).map(|()| true),
        None => Ok(false),
    }
}

/// Sends `state` to the notification socket at `path` (`@name` for the abstract namespace).
pub fn notify_to(path: &str, state: &str) -> io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    match path.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            socket.send_to_addr(state.as_bytes(), &address)?;
        }
        None => {
            socket.send_to(state.as_bytes(), path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reaches_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let socket = UnixDatagram::bind(&path).unwrap();
        notify_to(&path.to_string_lossy(), "READY=1").unwrap();
        let mut buffer = [0u8; 64];
        let read = socket.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..read], b"READY=1");
        assert!(notify_to(&dir.path().join("absent").to_string_lossy(), "READY=1").is_err());
    }
}
