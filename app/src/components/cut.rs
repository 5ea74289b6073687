//! What a page says under a body or snapshot it shows cut (`present::cut`): how large the whole
//! is, and a link to all of it.

use leptos::prelude::*;

/// A size as the "Show all" link says it: `812 KiB`, `1.4 MiB`.
pub fn size_in_words(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes < KIB * KIB {
        format!("{} KiB", bytes.div_ceil(KIB))
    } else {
        format!("{:.1} MiB", bytes as f64 / (KIB * KIB) as f64)
    }
}

/// "Only the start of the `what` is shown. Show all (812 KiB)", the link to `href` (the page
/// with the whole), `bytes` the whole's size as stored.
#[component]
pub fn ShownCut(
    what: &'static str,
    href: String,
    bytes: u64,
    testid: &'static str,
) -> impl IntoView {
    view! {
        <p class="cut" data-testid=testid>{format!("Only the start of the {what} is shown. ")}
            <a href=href data-testid="show-all">{format!("Show all ({})", size_in_words(bytes))}</a>
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::size_in_words;

    #[test]
    fn sizes_are_said_in_kib_rounded_up_then_in_mib() {
        assert_eq!(size_in_words(1), "1 KiB");
        assert_eq!(size_in_words(65 * 1024 + 1), "66 KiB");
        assert_eq!(size_in_words(1024 * 1024 - 1), "1024 KiB");
        assert_eq!(size_in_words(1_468_006), "1.4 MiB");
    }
}
