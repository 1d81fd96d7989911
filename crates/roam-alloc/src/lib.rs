//! roam's memory allocator, and giving free memory back when a thread goes idle.
//!
//! Message buffers come and go by the hundred thousand per second under load. mimalloc
//! returns the pages of a burst to the kernel once they have been free for its purge delay
//! (a second), but only when the process next allocates or frees through its slow path: a
//! router that goes quiet after a burst never does, and stayed 15-23 MB above its idle size
//! for as long as it was watched. [`collect_when_idle`], run whenever a runtime thread is
//! about to sleep, makes that thread hand its free pages back and purges what has expired,
//! at most once per [`COLLECT_EVERY`] per thread so a busy thread that parks thousands of
//! times a second pays for it rarely.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The allocator every roam binary installs (`#[global_allocator]`).
pub type Allocator = mimalloc::MiMalloc;

/// The allocator value for `#[global_allocator] static A: roam_alloc::Allocator = ...`.
pub const ALLOCATOR: Allocator = mimalloc::MiMalloc;

/// How often one thread may collect at most.
pub const COLLECT_EVERY: Duration = Duration::from_secs(1);

thread_local! {
    static LAST_COLLECT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Hands this thread's free pages back to the allocator's shared arenas and returns to the
/// kernel those free for longer than the purge delay, unless this thread did so less than
/// [`COLLECT_EVERY`] ago. Cheap when called more often (one clock read). For a runtime's
/// `on_thread_park`.
pub fn collect_when_idle() {
    let now = Instant::now();
    let due = LAST_COLLECT.with(|last| match last.get() {
        Some(t) if now.duration_since(t) < COLLECT_EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        collect();
    }
}

/// Hands this thread's free pages back and purges the arenas' expired free memory, now.
pub fn collect() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time;
    // `false` asks for a normal (not forced) collection of the calling thread's heap.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static A: Allocator = ALLOCATOR;

    #[test]
    fn collecting_keeps_live_memory_intact() {
        let kept: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i; 64 << 10]).collect();
        let freed: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i; 64 << 10]).collect();
        drop(freed);
        collect();
        collect_when_idle();
        collect_when_idle();
        for (i, v) in kept.iter().enumerate() {
            assert!(v.iter().all(|&b| b == i as u8));
        }
    }

    /// Resident memory of this process, from /proc (Linux).
    fn resident_bytes() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
        let pages: usize = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("resident pages");
        pages * 4096
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn freed_memory_goes_back_to_the_kernel_once_collected() {
        const MIB: usize = 1 << 20;
        let before = resident_bytes();
        let burst: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; MIB]).collect();
        assert!(
            resident_bytes() > before + 48 * MIB,
            "the burst is resident"
        );
        drop(burst);
        // Free pages go back once they have been free for the purge delay (a second), at the
        // next collection: collect until they have, with a deadline.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            collect();
            let now = resident_bytes();
            if now < before + 16 * MIB {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} MiB still resident 15 s after a 64 MiB burst ({} MiB before it)",
                now / MIB,
                before / MIB
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn a_thread_collects_at_most_once_per_period() {
        collect_when_idle();
        let first = LAST_COLLECT.with(Cell::get).expect("collected once");
        collect_when_idle();
        assert_eq!(LAST_COLLECT.with(Cell::get), Some(first));
    }
}
