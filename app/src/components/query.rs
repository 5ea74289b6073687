//! The page's URL query: the filter a page reads, and the links that carry it on.

use leptos_router::params::ParamsMap;

/// A parameter of the page's URL; an empty one is absent.
pub fn param(query: &ParamsMap, key: &str) -> Option<String> {
    query.get(key).filter(|v| !v.is_empty())
}

/// `key=value` (value URL-encoded) for each of `keys` the page's URL sets, in that order: the
/// filter a link to another page of the same list (or its export) carries on.
pub fn query_pairs(query: &ParamsMap, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| param(query, k).map(|v| format!("{k}={}", crate::url::urlencode(&v))))
        .collect()
}
