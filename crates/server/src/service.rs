//! The service manager's readiness protocol (systemd `Type=notify`): READY once every port
//! listens, RELOADING around a SIGHUP reload, STOPPING when a stop begins. Each call is a
//! no-op when the process was not started with `NOTIFY_SOCKET`.

use sd_notify::NotifyState;

pub fn ready() {
    send(&[NotifyState::Ready, NotifyState::Status("serving")]);
}

pub fn reloading() {
    send(&[NotifyState::Reloading]);
}

pub fn reloaded() {
    send(&[NotifyState::Ready]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

fn send(states: &[NotifyState<'_>]) {
    // `false`: keep NOTIFY_SOCKET set, since later states go to the same socket.
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!("cannot notify the service manager: {e}");
    }
}
