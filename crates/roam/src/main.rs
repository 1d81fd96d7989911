use clap::Parser;

/// Message buffers come and go by the hundred thousand per second under load; mimalloc
/// returns the pages of a burst to the kernel once it has passed (glibc's arenas keep them).
#[global_allocator]
static ALLOCATOR: roam_alloc::Allocator = roam_alloc::ALLOCATOR;

fn main() -> std::process::ExitCode {
    // Transparent huge pages make the allocator give memory back in 2 MiB pieces only, so a
    // proxy stayed tens of MB above idle long after a burst; a forwarding process gains
    // nothing from them.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = nix::sys::prctl::set_thp_disable(true);
    let cli = roam::cmd::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,quinn=warn,rustls=warn".into()),
        )
        .init();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.worker_threads(std::env::var_os("TOKIO_WORKER_THREADS").as_deref()) {
        runtime.worker_threads(n);
    }
    // A worker about to sleep gives its free memory back, so a process that goes quiet
    // after a burst returns to near its idle size instead of keeping the burst's pages.
    runtime.on_thread_park(roam_alloc::collect_when_idle);
    let rt = match runtime.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("roam: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(roam::cmd::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roam: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
