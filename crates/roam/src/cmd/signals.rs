//! The signals that ask a roam process to stop, handled so that it stops cleanly: with its
//! summary, its children stopped, exit status 0.
//!
//! Handlers are installed when [`Stop::install`] runs, not when it is first awaited, so no
//! signal is lost between the two. Installing one replaces an inherited "ignore": a shell
//! that starts a job in the background (`roam pub ... &` in a script) sets SIGINT and
//! SIGQUIT to ignored, and the job must still stop on `kill -INT`.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Installed stop signals; [`Stop::wait`] returns the name of the first one that arrives.
pub struct Stop {
    int: Signal,
    term: Signal,
    hup: Option<Signal>,
    quit: Option<Signal>,
}

fn install(kind: SignalKind, name: &str) -> Result<Signal, String> {
    signal(kind).map_err(|e| format!("cannot handle {name}: {e}"))
}

impl Stop {
    /// SIGINT (Ctrl-C), SIGTERM (`kill`, service managers) and SIGHUP (the terminal closed).
    pub fn install() -> Result<Self, String> {
        Ok(Self {
            int: install(SignalKind::interrupt(), "SIGINT")?,
            term: install(SignalKind::terminate(), "SIGTERM")?,
            hup: Some(install(SignalKind::hangup(), "SIGHUP")?),
            quit: None,
        })
    }

    /// SIGINT and SIGTERM only: for a process that reloads its rules on SIGHUP.
    pub fn install_without_hangup() -> Result<Self, String> {
        Ok(Self {
            int: install(SignalKind::interrupt(), "SIGINT")?,
            term: install(SignalKind::terminate(), "SIGTERM")?,
            hup: None,
            quit: None,
        })
    }

    /// Also SIGQUIT, for processes whose children must not outlive them (`roam demo`).
    pub fn install_with_quit() -> Result<Self, String> {
        let mut s = Self::install()?;
        s.quit = Some(install(SignalKind::quit(), "SIGQUIT")?);
        Ok(s)
    }

    /// Waits for the first stop signal and returns its name.
    pub async fn wait(&mut self) -> &'static str {
        let Stop {
            int,
            term,
            hup,
            quit,
        } = self;
        let quit = async {
            match quit {
                Some(q) => q.recv().await,
                None => std::future::pending().await,
            }
        };
        let hup = async {
            match hup {
                Some(h) => h.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup => "SIGHUP",
            _ = quit => "SIGQUIT",
        }
    }
}
