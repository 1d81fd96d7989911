//! What an action server knows of its goals: their states, the results of finished ones, and
//! who waits for which result. Pure: fed requests and the time, no I/O; bounded.
//!
//! The rules are rcl_action's: a goal is cancelable while accepted or executing; a cancel
//! request names a goal, every goal accepted up to a time, both, or (all zero) every goal; a
//! result request for a goal still running waits for its result; a finished goal's result is
//! kept for [`RESULT_TIMEOUT`] (rcl_action's default), then forgotten.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::wire::{CancelCode, CancelResponse, GoalId, GoalInfo, GoalStatus, Time};
use crate::service::RequestId;

/// How long a finished goal's result stays available (rcl_action's default: 15 minutes).
pub const RESULT_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Goals a server keeps at once, running and finished; the oldest finished go first, and a new
/// goal is rejected when all are running.
pub const MAX_GOALS: usize = 1024;
/// Result requests waiting per goal; beyond it the oldest is no longer answered.
pub const MAX_WAITING: usize = 64;

#[derive(Debug)]
struct Goal {
    info: GoalInfo,
    status: GoalStatus,
    /// The `X_GetResult_Response`, once finished (`None` for a goal abandoned without one).
    result: Option<Vec<u8>>,
    waiting: Vec<RequestId>,
    finished_at: Option<Instant>,
    /// Acceptance order: the oldest finished goal is forgotten first.
    order: u64,
}

/// Why a goal is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A goal with this id exists already.
    Duplicate,
    /// [`MAX_GOALS`] goals are running.
    Full,
}

/// What a result request gets.
#[derive(Debug, PartialEq, Eq)]
pub enum ResultAnswer {
    /// The goal is finished: its result.
    Now(Vec<u8>),
    /// The goal is running: the request waits for [`Goals::finish`].
    Later,
    /// No such goal (or finished without a result): no answer.
    Unknown,
}

#[derive(Debug, Default)]
pub struct Goals {
    goals: HashMap<GoalId, Goal>,
    next_order: u64,
}

impl Goals {
    /// Takes a goal, accepted at `stamp`.
    pub fn accept(&mut self, id: GoalId, stamp: Time, now: Instant) -> Result<GoalInfo, Refused> {
        self.expire(now);
        if self.goals.contains_key(&id) {
            return Err(Refused::Duplicate);
        }
        if self.goals.len() >= MAX_GOALS {
            let oldest = self
                .goals
                .values()
                .filter(|g| g.finished_at.is_some())
                .min_by_key(|g| g.order)
                .map(|g| g.info.goal_id);
            match oldest {
                Some(o) => {
                    self.goals.remove(&o);
                }
                None => return Err(Refused::Full),
            }
        }
        let info = GoalInfo { goal_id: id, stamp };
        self.next_order += 1;
        self.goals.insert(
            id,
            Goal {
                info,
                status: GoalStatus::Accepted,
                result: None,
                waiting: Vec::new(),
                finished_at: None,
                order: self.next_order,
            },
        );
        Ok(info)
    }

    pub fn status(&self, id: &GoalId) -> Option<GoalStatus> {
        self.goals.get(id).map(|g| g.status)
    }

    /// An accepted goal starts executing; true if that changed its status.
    pub fn execute(&mut self, id: &GoalId) -> bool {
        match self.goals.get_mut(id) {
            Some(g) if g.status == GoalStatus::Accepted => {
                g.status = GoalStatus::Executing;
                true
            }
            _ => false,
        }
    }

    /// Applies a cancel request: the goals it names that are still cancelable move to
    /// canceling and are listed in the response.
    pub fn cancel(&mut self, req: &GoalInfo) -> CancelResponse {
        let by_id = !req.goal_id.is_zero();
        let by_time = !req.stamp.is_zero();
        if by_id && !by_time {
            match self.goals.get(&req.goal_id) {
                None => return response(CancelCode::UnknownGoal, Vec::new()),
                Some(g) if g.status.is_terminal() => {
                    return response(CancelCode::GoalTerminated, Vec::new())
                }
                Some(_) => {}
            }
        }
        let mut canceling: Vec<GoalInfo> = Vec::new();
        for g in self.goals.values_mut() {
            let named = if !by_id && !by_time {
                true
            } else {
                (by_id && g.info.goal_id == req.goal_id) || (by_time && g.info.stamp <= req.stamp)
            };
            if named && matches!(g.status, GoalStatus::Accepted | GoalStatus::Executing) {
                g.status = GoalStatus::Canceling;
                canceling.push(g.info);
            }
        }
        canceling.sort_by_key(|g| (g.stamp, g.goal_id));
        let code = if canceling.is_empty() {
            CancelCode::Rejected
        } else {
            CancelCode::None
        };
        response(code, canceling)
    }

    /// A result request `req` for goal `id`.
    pub fn result_request(&mut self, id: &GoalId, req: RequestId, now: Instant) -> ResultAnswer {
        self.expire(now);
        let Some(g) = self.goals.get_mut(id) else {
            return ResultAnswer::Unknown;
        };
        match (&g.result, g.finished_at) {
            (Some(r), _) => ResultAnswer::Now(r.clone()),
            (None, Some(_)) => ResultAnswer::Unknown,
            (None, None) => {
                if g.waiting.len() >= MAX_WAITING {
                    g.waiting.remove(0);
                }
                g.waiting.push(req);
                ResultAnswer::Later
            }
        }
    }

    /// A running goal finishes with `status` (terminal) and `result`; returns the result
    /// requests waiting for it. `None` if the goal is unknown or finished already.
    pub fn finish(
        &mut self,
        id: &GoalId,
        status: GoalStatus,
        result: Option<Vec<u8>>,
        now: Instant,
    ) -> Option<Vec<RequestId>> {
        let g = self.goals.get_mut(id)?;
        if g.finished_at.is_some() {
            return None;
        }
        g.status = status;
        g.result = result;
        g.finished_at = Some(now);
        Some(std::mem::take(&mut g.waiting))
    }

    /// Every goal and its status, in acceptance order (what the status topic carries).
    pub fn status_list(&mut self, now: Instant) -> Vec<(GoalInfo, GoalStatus)> {
        self.expire(now);
        let mut list: Vec<&Goal> = self.goals.values().collect();
        list.sort_by_key(|g| g.order);
        list.into_iter().map(|g| (g.info, g.status)).collect()
    }

    /// Forgets goals finished more than [`RESULT_TIMEOUT`] ago.
    fn expire(&mut self, now: Instant) {
        self.goals.retain(|_, g| {
            g.finished_at
                .is_none_or(|t| now.saturating_duration_since(t) < RESULT_TIMEOUT)
        });
    }
}

fn response(code: CancelCode, goals_canceling: Vec<GoalInfo>) -> CancelResponse {
    CancelResponse {
        code,
        goals_canceling,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> GoalId {
        GoalId([n; 16])
    }

    fn at(sec: i32) -> Time {
        Time { sec, nanosec: 0 }
    }

    fn req(seq: i64) -> RequestId {
        RequestId { client: 1, seq }
    }

    #[test]
    fn a_result_asked_early_waits_and_one_asked_late_comes_at_once() {
        let t0 = Instant::now();
        let mut g = Goals::default();
        g.accept(id(1), at(1), t0).unwrap();
        assert_eq!(g.accept(id(1), at(1), t0), Err(Refused::Duplicate));
        assert!(g.execute(&id(1)));
        assert!(!g.execute(&id(1)));
        assert_eq!(g.result_request(&id(1), req(1), t0), ResultAnswer::Later);
        assert_eq!(g.result_request(&id(9), req(2), t0), ResultAnswer::Unknown);
        let waiting = g
            .finish(&id(1), GoalStatus::Succeeded, Some(vec![4]), t0)
            .unwrap();
        assert_eq!(waiting, vec![req(1)]);
        assert_eq!(g.finish(&id(1), GoalStatus::Aborted, None, t0), None);
        assert_eq!(
            g.result_request(&id(1), req(3), t0),
            ResultAnswer::Now(vec![4])
        );
        assert_eq!(
            g.status_list(t0),
            vec![(
                GoalInfo {
                    goal_id: id(1),
                    stamp: at(1)
                },
                GoalStatus::Succeeded
            )]
        );
        // Forgotten after the result timeout.
        assert!(g.status_list(t0 + RESULT_TIMEOUT).is_empty());
    }

    #[test]
    fn cancel_requests_name_goals_by_id_time_both_or_all() {
        let t0 = Instant::now();
        let mut g = Goals::default();
        for n in 1..=4 {
            g.accept(id(n), at(i32::from(n) * 10), t0).unwrap();
        }
        g.finish(&id(4), GoalStatus::Succeeded, Some(vec![]), t0);
        let r = g.cancel(&GoalInfo {
            goal_id: id(9),
            stamp: Time::default(),
        });
        assert_eq!(r.code, CancelCode::UnknownGoal);
        let r = g.cancel(&GoalInfo {
            goal_id: id(4),
            stamp: Time::default(),
        });
        assert_eq!(r.code, CancelCode::GoalTerminated);
        // By time: every goal accepted up to 15 s.
        let r = g.cancel(&GoalInfo {
            goal_id: GoalId::default(),
            stamp: at(15),
        });
        assert_eq!(r.code, CancelCode::None);
        assert_eq!(
            r.goals_canceling
                .iter()
                .map(|i| i.goal_id)
                .collect::<Vec<_>>(),
            [id(1)]
        );
        assert_eq!(g.status(&id(1)), Some(GoalStatus::Canceling));
        // By id and time: goal 3, and those up to 20 s (goal 2; goal 1 is canceling already).
        let r = g.cancel(&GoalInfo {
            goal_id: id(3),
            stamp: at(20),
        });
        assert_eq!(r.goals_canceling.len(), 2);
        // All: nothing cancelable is left.
        let r = g.cancel(&GoalInfo::default());
        assert_eq!(r.code, CancelCode::Rejected);
        assert!(r.goals_canceling.is_empty());
    }

    #[test]
    fn the_table_is_bounded() {
        let t0 = Instant::now();
        let mut g = Goals::default();
        let goal = |n: usize| {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&(n as u64 + 1).to_le_bytes());
            GoalId(b)
        };
        for n in 0..MAX_GOALS {
            g.accept(goal(n), at(1), t0).unwrap();
        }
        assert_eq!(g.accept(goal(MAX_GOALS), at(1), t0), Err(Refused::Full));
        g.finish(&goal(7), GoalStatus::Aborted, Some(vec![]), t0);
        g.accept(goal(MAX_GOALS), at(1), t0).unwrap();
        assert_eq!(
            g.status(&goal(7)),
            None,
            "the oldest finished goal made room"
        );
        for n in 0..MAX_WAITING + 5 {
            g.result_request(&goal(0), req(n as i64), t0);
        }
        let waiting = g
            .finish(&goal(0), GoalStatus::Succeeded, Some(vec![]), t0)
            .unwrap();
        assert_eq!(waiting.len(), MAX_WAITING);
        assert_eq!(waiting[0], req(5));
    }
}
