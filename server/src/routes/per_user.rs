//! How much of the dashboard one signed-in user takes at once: at most [`RUNNING_PER_USER`] of
//! their requests run at a time, the others wait their turn, and past [`REQUESTS_PER_USER`] in
//! flight the next is answered 429 at once instead of queued.
//!
//! The dashboard's pool is small (four connections on PostgreSQL), so without this one viewer
//! holding many heavy pages open at once would make every other viewer wait for a connection,
//! then answer them 503. A browser's burst (a page's few calls at once) waits a moment in turn;
//! a script past the bound is told to wait, and the others keep their share of the pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Dashboard requests one user may have in flight at once, running or waiting their turn
/// (pages, server functions, an export for as long as it streams); the next is a 429.
pub const REQUESTS_PER_USER: usize = 8;
/// Of those, how many run at a time: half the dashboard's PostgreSQL pool.
pub const RUNNING_PER_USER: usize = 2;

/// One user's requests: how many are in flight, and the turns to run.
#[derive(Debug)]
struct Usage {
    in_flight: usize,
    turns: Arc<Semaphore>,
}

/// The requests in flight, by user name (users are the operator's accounts: a bounded map).
#[derive(Debug, Default, Clone)]
pub struct InFlight {
    users: Arc<Mutex<HashMap<String, Usage>>>,
}

/// One request's place among its user's; dropping it frees the place.
#[derive(Debug)]
pub struct Place {
    users: Arc<Mutex<HashMap<String, Usage>>>,
    user: String,
    turns: Arc<Semaphore>,
}

/// A request's turn to run; dropping it lets the user's next request run.
#[derive(Debug)]
pub struct Turn {
    _permit: OwnedSemaphorePermit,
    _place: Place,
}

/// The users' counts; a panic while another request held them left them whole (each change is
/// one step), so they are used as they are.
fn lock(users: &Mutex<HashMap<String, Usage>>) -> MutexGuard<'_, HashMap<String, Usage>> {
    users.lock().unwrap_or_else(|e| e.into_inner())
}

impl InFlight {
    /// A place for one more request of `user`, or the sentence that refuses it.
    pub fn enter(&self, user: &str) -> Result<Place, String> {
        let mut users = lock(&self.users);
        let usage = users.entry(user.to_string()).or_insert_with(|| Usage {
            in_flight: 0,
            turns: Arc::new(Semaphore::new(RUNNING_PER_USER)),
        });
        if usage.in_flight >= REQUESTS_PER_USER {
            return Err(format!(
                "you already have {} requests in progress, the most hookbox takes from one user at once; wait for them to finish, then try again",
                usage.in_flight
            ));
        }
        usage.in_flight += 1;
        Ok(Place {
            users: self.users.clone(),
            user: user.to_string(),
            turns: usage.turns.clone(),
        })
    }

    /// Requests of `user` in flight, running or waiting.
    pub fn of(&self, user: &str) -> usize {
        let users = lock(&self.users);
        users.get(user).map_or(0, |usage| usage.in_flight)
    }
}

impl Place {
    /// Waits for the request's turn among its user's (at most [`RUNNING_PER_USER`] run); the
    /// router's request deadline bounds the wait.
    pub async fn turn(self) -> Turn {
        let permit = self
            .turns
            .clone()
            .acquire_owned()
            .await
            .expect("a user's turns are never closed");
        Turn {
            _permit: permit,
            _place: self,
        }
    }

    /// A turn for one step of a request that outlives its answer's head (an export's next
    /// batch), keeping the place: the step waits as any of the user's requests would.
    pub async fn step(&self) -> OwnedSemaphorePermit {
        self.turns
            .clone()
            .acquire_owned()
            .await
            .expect("a user's turns are never closed")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut users = lock(&self.users);
        if let Some(usage) = users.get_mut(&self.user) {
            usage.in_flight = usage.in_flight.saturating_sub(1);
            if usage.in_flight == 0 {
                users.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_user_runs_two_at_a_time_waits_past_that_and_is_refused_past_eight() {
        let in_flight = InFlight::default();
        let mut places: Vec<_> = (0..REQUESTS_PER_USER)
            .map(|_| in_flight.enter("mallory").expect("within the bound"))
            .collect();
        let refused = in_flight.enter("mallory").expect_err("past the bound");
        assert!(
            refused.contains("you already have 8 requests in progress"),
            "{refused}"
        );
        let first = places.pop().expect("eight places").turn().await;
        let second = places.pop().expect("eight places").turn().await;
        let third = places.pop().expect("eight places");
        let waiting = tokio::spawn(third.turn());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the third waits for a turn");
        let olga = in_flight.enter("olga").expect("places are per user");
        let _olga = olga.turn().await;
        drop(first);
        let _third = waiting
            .await
            .expect("the third runs once the first is done");
        drop((second, places));
        assert_eq!(in_flight.of("mallory"), 1, "only the third is left");
    }
}
