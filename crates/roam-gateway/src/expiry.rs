//! When an identity's token expires, as a time a connection's loop sleeps to: every door ends
//! what the identity holds then (subscriptions, advertisements, services, goals), so an
//! expired token stops working on open connections as it does on new ones.

use std::time::Duration;

use crate::auth::Identity;

/// When `id`'s token expires, as a time the runtime sleeps to (None: never).
pub fn expiry(id: Option<&Identity>) -> Option<tokio::time::Instant> {
    let at = id?.expires?;
    let left = at.saturating_sub(crate::unix_now()).max(0) as u64;
    Some(tokio::time::Instant::now() + Duration::from_secs(left))
}

/// Sleeps until `at`, forever without one.
pub async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What a client whose token expired is told.
pub fn expired(id: Option<&Identity>) -> String {
    let name = id.map(|i| i.name.as_str()).unwrap_or("the client");
    format!("the token of {name} expired: its subscriptions, advertisements, services and goals are ended")
}
