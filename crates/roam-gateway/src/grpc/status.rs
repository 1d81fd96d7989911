//! What a gRPC caller is told, and what it sends besides messages (pure): failures as gRPC
//! statuses with the code a client can act on, the bearer token from the call's metadata, goal
//! ids as UUID text.

use roam_edge::action::{ActionError, GoalId};
use roam_edge::ServiceError;
use tonic::{Code, Status};

use crate::auth::Refused;
use crate::session::SessionError;

/// What a caller without a token is told when the gateway wants one.
pub const NO_TOKEN: &str = "not authenticated: this gateway requires a token (gRPC metadata `authorization: Bearer TOKEN`)";

/// The token of `authorization: Bearer TOKEN` (the scheme in any case); None without one.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let v = authorization?.trim();
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// An authentication or permission refusal.
pub fn refused(r: &Refused) -> Status {
    match r {
        Refused::Unauthenticated => Status::unauthenticated(NO_TOKEN),
        Refused::UnknownToken | Refused::Expired { .. } | Refused::UnknownCertificate { .. } => {
            Status::unauthenticated(r.to_string())
        }
        Refused::NotAllowed { .. } => Status::permission_denied(r.to_string()),
    }
}

/// A session's failure, with the message it says to the client.
pub fn session(e: &SessionError) -> Status {
    use SessionError as E;
    let code = match e {
        E::Refused(r) => return refused(r),
        E::Ruled { .. } => Code::PermissionDenied,
        E::Name(_)
        | E::Type(_)
        | E::ServiceName(_)
        | E::TypeChanged { .. }
        | E::Encode { .. }
        | E::Args(_) => Code::InvalidArgument,
        E::UnknownType(_) | E::NotAdvertised(_) | E::NoDefinition(_) => Code::NotFound,
        E::BadReply { .. } => Code::Internal,
        E::Edge { .. } => Code::Unavailable,
        E::Service(s) => service_code(s),
        E::Response(_) => Code::Unknown,
        E::TooMany { .. } => Code::ResourceExhausted,
    };
    Status::new(code, e.to_string())
}

fn service_code(e: &ServiceError) -> Code {
    match e {
        ServiceError::Timeout { .. } => Code::DeadlineExceeded,
        ServiceError::NoServer { .. } | ServiceError::Closed { .. } | ServiceError::Edge(_) => {
            Code::Unavailable
        }
        ServiceError::TooManyPending { .. } => Code::ResourceExhausted,
        ServiceError::Wire(_) => Code::Internal,
        // The serving program's own refusal, as a server application's error.
        ServiceError::Failed { .. } => Code::Unknown,
    }
}

/// An action client's failure.
pub fn action(e: &ActionError) -> Status {
    let code = match e {
        ActionError::Rejected { .. } | ActionError::NotTerminal(_) | ActionError::Finished(_) => {
            Code::FailedPrecondition
        }
        ActionError::TooManyGoals { .. } => Code::ResourceExhausted,
        ActionError::Service(s) => service_code(s),
        ActionError::Wire(_) => Code::Internal,
        ActionError::Edge(_) => Code::Unavailable,
    };
    Status::new(code, e.to_string())
}

/// A goal id from its UUID text (hyphens optional, either case).
pub fn parse_goal_id(text: &str) -> Option<GoalId> {
    let hex: Vec<u8> = text.bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        id[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(GoalId(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Action;

    #[test]
    fn the_token_comes_from_a_bearer_authorization() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(Some("abc")), None);
        assert_eq!(bearer(None), None);
    }

    #[test]
    fn refusals_are_unauthenticated_or_permission_denied() {
        assert_eq!(refused(&Refused::Unauthenticated).message(), NO_TOKEN);
        assert_eq!(
            refused(&Refused::UnknownToken).code(),
            Code::Unauthenticated
        );
        let r = Refused::NotAllowed {
            identity: "dash".into(),
            action: Action::Subscribe,
            name: "/secret".into(),
        };
        let s = session(&SessionError::Refused(r));
        assert_eq!(s.code(), Code::PermissionDenied);
        assert_eq!(s.message(), "dash may not subscribe to /secret");
        let s = session(&SessionError::NoDefinition("my_msgs/msg/X".into()));
        assert_eq!(s.code(), Code::NotFound);
        let s = service_code(&ServiceError::Timeout {
            service: "/a".into(),
            timeout: std::time::Duration::from_secs(1),
        });
        assert_eq!(s, Code::DeadlineExceeded);
    }

    #[test]
    fn goal_ids_read_back_from_their_text() {
        let id = GoalId::random();
        assert_eq!(parse_goal_id(&id.to_string()), Some(id));
        let plain: String = id.to_string().replace('-', "").to_uppercase();
        assert_eq!(parse_goal_id(&plain), Some(id));
        assert_eq!(parse_goal_id("1234"), None);
        assert_eq!(parse_goal_id(&"zz".repeat(16)), None);
        assert_eq!(parse_goal_id(&"é".repeat(16)), None);
    }
}
