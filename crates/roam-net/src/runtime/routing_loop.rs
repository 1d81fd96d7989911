//! The routing loop: the task that keeps the core's timers and carries out what is sent to it.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::{Command, Direct};
use crate::link::{LinkId, LinkInput};

/// Most commands or link inputs taken per turn of the runtime's loop before it flushes.
const BATCH: usize = 256;

/// The routing loop: commands and link inputs sent to it, and the core's timers. Messages
/// are mostly routed by whoever brings them ([`direct`]); what comes here is carried out
/// under the same lock, in the order sent.
pub(super) async fn run(
    direct: Arc<Direct>,
    mut cmd: mpsc::Receiver<Command>,
    mut inbound: mpsc::Receiver<(LinkId, LinkInput)>,
    ep: quinn::Endpoint,
) {
    loop {
        let deadline = match direct.lock().as_mut() {
            Some(rt) => rt.arm(),
            None => return,
        };
        let deadline = deadline.map(tokio::time::Instant::from_std);
        // What is already queued is taken in the same turn, with one reading of the clock
        // (the routing core's timers need no finer time): one wake-up and one lock for a
        // burst of messages instead of one each.
        tokio::select! {
            biased;
            c = cmd.recv() => {
                let Some(c) = c else { break };
                let now = Instant::now();
                let mut guard = direct.lock();
                let Some(rt) = guard.as_mut() else { return };
                let mut next = Some(c);
                let mut taken = 0;
                while let Some(c) = next.take() {
                    direct.carried_out(1);
                    if matches!(c, Command::Shutdown) {
                        if let Some(rt) = guard.take() {
                            rt.shut_down(ep);
                        }
                        return;
                    }
                    rt.command(c, now);
                    // Each command's deliveries and demand changes go out before the
                    // next command runs: an Unsubscribe after a Send must not find the
                    // envelope still queued for the subscriber it removes.
                    rt.flush();
                    taken += 1;
                    if taken < BATCH {
                        next = cmd.try_recv().ok();
                    }
                }
            },
            m = inbound.recv() => {
                let Some((link, input)) = m else { break };
                let now = Instant::now();
                let mut guard = direct.lock();
                let Some(rt) = guard.as_mut() else { return };
                rt.input(link, input, now);
                direct.carried_out(1);
                for _ in 1..BATCH {
                    match inbound.try_recv() {
                        Ok((link, input)) => {
                            rt.input(link, input, now);
                            direct.carried_out(1);
                        }
                        Err(_) => break,
                    }
                }
                rt.flush();
            },
            _ = direct.timer_moved.notified() => {},
            _ = sleep_until(deadline) => {
                if let Some(rt) = direct.lock().as_mut() {
                    rt.core.handle_timeout(Instant::now());
                    rt.flush();
                }
            },
        }
    }
    if let Some(rt) = direct.lock().take() {
        rt.shut_down(ep);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
