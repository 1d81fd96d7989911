//! Seal and open cost per payload size, plain and signed (Ed25519).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use roam_proto::{Name, Opener, OpenerConfig, RealmSecret, Sealer, SigningIdentity};
use serde::Serialize;

use crate::timer::{measure, time_loop, OpTime, Plan};

pub const SIZES: [usize; 4] = [64, 1024, 64 * 1024, 1024 * 1024];

#[derive(Debug, Clone, Serialize)]
pub struct SealOpen {
    pub payload_bytes: usize,
    pub signed: bool,
    pub seal: OpTime,
    pub open: OpTime,
    /// Payload megabytes (10^6 bytes) per second at the median.
    pub seal_mb_s: f64,
    pub open_mb_s: f64,
}

fn mb_s(bytes: usize, ns: f64) -> f64 {
    bytes as f64 / ns * 1e3
}

fn realm() -> RealmSecret {
    RealmSecret::from_bytes([7; 32])
}

/// Prepared envelopes for the open measurement: at most this many bytes in memory.
const OPEN_POOL_BYTES: usize = 64 << 20;

pub fn run(plan: Plan) -> Result<Vec<SealOpen>, String> {
    let mut out = Vec::new();
    let signer = Arc::new(SigningIdentity::from_seed(&[9; 32]));
    for signed in [false, true] {
        for &size in &SIZES {
            let payload = vec![0xa5u8; size];
            let name = Name([3; 32]);
            let sig = signed.then(|| signer.clone());
            let mut sealer = Sealer::with_session(&realm(), name, 1, false, sig.clone());
            let mut buf = Vec::new();
            let mut err = None;
            let seal = measure(plan, u64::MAX, |n| {
                time_loop(n, |_| {
                    if let Err(e) = sealer.seal(black_box(&payload), 1, &mut buf) {
                        err = Some(e);
                    }
                    black_box(&buf);
                })
            });
            if let Some(e) = err {
                return Err(format!("seal failed: {e}"));
            }

            // Opening consumes sequence numbers (replay protection), so envelopes are sealed
            // once and each batch opens them with a fresh opener (its session key derived on
            // the first envelope, amortised over the batch).
            let pool = (OPEN_POOL_BYTES / (size + 200)).clamp(8, 200_000);
            let mut sealer = Sealer::with_session(&realm(), name, 2, false, sig);
            let envs = (0..pool)
                .map(|_| sealer.seal_to_vec(&payload, 1))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("seal failed: {e}"))?;
            let mut members = HashMap::new();
            members.insert(signer.public_key(), "bench".to_string());
            let cfg = OpenerConfig {
                members,
                ..OpenerConfig::default()
            };
            let mut plain = Vec::new();
            let mut failed = 0u64;
            let open = measure(plan, pool as u64, |n| {
                let mut opener = Opener::new(&realm(), cfg.clone());
                time_loop(n, |i| {
                    if opener
                        .open(black_box(&envs[i as usize]), 1, &mut plain)
                        .is_err()
                    {
                        failed += 1;
                    }
                    black_box(&plain);
                })
            });
            if failed > 0 {
                return Err(format!(
                    "{failed} envelopes failed to open ({size} B, signed {signed})"
                ));
            }
            let row = SealOpen {
                payload_bytes: size,
                signed,
                seal_mb_s: mb_s(size, seal.median_ns),
                open_mb_s: mb_s(size, open.median_ns),
                seal,
                open,
            };
            eprintln!(
                "  seal/open {:>8} B signed={:<5} seal {:>10.0} ns ({:>7.1} MB/s)  open {:>10.0} ns ({:>7.1} MB/s)",
                size, signed, row.seal.median_ns, row.seal_mb_s, row.open.median_ns, row.open_mb_s
            );
            out.push(row);
        }
    }
    Ok(out)
}
