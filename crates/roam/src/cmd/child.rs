//! `roam child-of PID -- PROGRAM ARGS...` (hidden): becomes PROGRAM, set to be killed when
//! process PID ends. `roam demo` starts every process this way, so that none outlives it,
//! even when the demo itself is killed with SIGKILL and can clean up nothing.
//!
//! The parent-death signal must be set in the child between fork and exec; doing that in
//! the demo would need `pre_exec` (unsafe code, forbidden outside roam-dds). This step sets
//! it on itself and then execs in place: the PID, and the signal, stay.

use std::ffi::OsString;

use clap::Args;

use super::CmdResult;

#[derive(Debug, Args)]
pub struct ChildOfArgs {
    /// The parent whose end kills PROGRAM (checked to still be this process's parent).
    pub parent: u32,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

pub fn run(a: ChildOfArgs) -> CmdResult {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("cannot set the parent-death signal: {e}"))?;
    // The parent may have ended before the signal was set: then nobody would send it.
    #[cfg(unix)]
    if std::os::unix::process::parent_id() != a.parent {
        return Err(format!("parent {} has already ended", a.parent));
    }
    let (program, args) = a.command.split_first().ok_or("no program to run")?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Returns only if the program could not be started.
        let e = cmd.exec();
        Err(format!("cannot run {}: {e}", program.to_string_lossy()))
    }
    #[cfg(not(unix))]
    {
        let status = cmd.status().map_err(|e| e.to_string())?;
        std::process::exit(status.code().unwrap_or(1))
    }
}
