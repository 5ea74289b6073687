//! JSON numbers as PostgreSQL `numeric` sees them: the digits and exponent of a value, the
//! display scale of a spelling, and the limits `numeric` (and so `jsonb`) can store.

/// PostgreSQL `numeric` holds up to 131072 digits before the point and 16383 after.
pub(super) const MAX_INTEGER_DIGITS: i64 = 131_072;
pub(super) const MAX_FRACTION_DIGITS: i64 = 16_383;

/// Digits without leading or trailing zeros and a decimal exponent: `1.50` → `15e-1`, `0` → `0`.
pub(super) struct Decimal {
    pub(super) negative: bool,
    pub(super) digits: String,
    pub(super) exponent: i64,
}

/// Splits a number that already passed the grammar. Exponents are bounded by the caller's
/// range check, so the arithmetic here cannot overflow.
pub(super) fn decimal(text: &str) -> Option<Decimal> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp_text) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, "0"),
    };
    let exp_text = exp_text.strip_prefix('+').unwrap_or(exp_text);
    // More than 18 digits of exponent cannot be in range anyway.
    let exp_digits = exp_text.trim_start_matches('-').trim_start_matches('0');
    if exp_digits.len() > 18 {
        return None;
    }
    let exp: i64 = exp_text.parse().ok()?;
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let mut digits = String::with_capacity(int_part.len() + frac_part.len());
    digits.push_str(int_part);
    digits.push_str(frac_part);
    let mut exponent = exp.checked_sub(i64::try_from(frac_part.len()).ok()?)?;
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        return Some(Decimal {
            negative: false,
            digits: "0".into(),
            exponent: 0,
        });
    }
    let without_trailing = trimmed.trim_end_matches('0');
    exponent = exponent.checked_add(i64::try_from(trimmed.len() - without_trailing.len()).ok()?)?;
    Some(Decimal {
        negative,
        digits: without_trailing.to_string(),
        exponent,
    })
}

/// The display scale PostgreSQL's `numeric` gives a number as spelled: the digits after the
/// point minus the exponent, at least 0. `numeric` (and so `jsonb`) refuses more than
/// [`MAX_FRACTION_DIGITS`] whatever the value: `10e-16384` is 1e-16383, yet its scale is 16384,
/// and even `0e-20000` is refused. The caller has checked the grammar.
pub(super) fn display_scale(text: &str) -> i64 {
    let (mantissa, exp_text) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, "0"),
    };
    let fraction = mantissa.find('.').map_or(0, |i| mantissa.len() - i - 1);
    let fraction = i64::try_from(fraction).unwrap_or(i64::MAX);
    let exp_text = exp_text.strip_prefix('+').unwrap_or(exp_text);
    let exponent = match exp_text.parse::<i64>() {
        Ok(exponent) => exponent,
        // Too many digits to fit: a huge negative exponent is a huge scale, a positive one none.
        Err(_) if exp_text.starts_with('-') => i64::MIN,
        Err(_) => i64::MAX,
    };
    fraction.saturating_sub(exponent).max(0)
}
