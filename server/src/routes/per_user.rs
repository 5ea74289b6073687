//! How many dashboard requests one signed-in user has in flight at once: at most
//! [`REQUESTS_PER_USER`], the next answered 429 at once instead of queued.
//!
//! The dashboard's pool is small (four connections on PostgreSQL), so without this one viewer
//! holding many heavy pages open at once would make every other viewer wait for a connection,
//! then answer them 503. A person's browser has one page loading and its refreshes; a script
//! past that is told to wait, and the others keep their share of the pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Dashboard requests one user may have in flight at once (pages, server functions, exports);
/// the next is a 429.
pub const REQUESTS_PER_USER: usize = 3;

/// The requests in flight, by user name (users are the operator's accounts: a bounded map).
#[derive(Debug, Default, Clone)]
pub struct InFlight {
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// One request's place among its user's; dropping it frees the place.
#[derive(Debug)]
pub struct Place {
    running: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
}

impl InFlight {
    /// A place for one more request of `user`, or the sentence that refuses it.
    pub fn enter(&self, user: &str) -> Result<Place, String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mine = running.entry(user.to_string()).or_default();
        if *mine >= REQUESTS_PER_USER {
            return Err(format!(
                "you already have {mine} requests running, the most hookbox serves one user at once; wait for them to finish, then try again"
            ));
        }
        *mine += 1;
        Ok(Place {
            running: self.running.clone(),
            user: user.to_string(),
        })
    }

    /// Requests in flight of `user`.
    pub fn of(&self, user: &str) -> usize {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.get(user).copied().unwrap_or(0)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = running.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_past_the_bound_is_refused_and_a_finished_request_frees_its_place() {
        let in_flight = InFlight::default();
        let places: Vec<_> = (0..REQUESTS_PER_USER)
            .map(|_| in_flight.enter("mallory").expect("within the bound"))
            .collect();
        let refused = in_flight.enter("mallory").expect_err("past the bound");
        assert!(
            refused.contains("you already have 3 requests running"),
            "{refused}"
        );
        assert!(in_flight.enter("olga").is_ok(), "places are per user");
        drop(places);
        assert_eq!(in_flight.of("mallory"), 0, "every place freed");
        assert!(in_flight.enter("mallory").is_ok());
    }
}
