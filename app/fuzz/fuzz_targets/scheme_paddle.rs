#![no_main]

use hookbox_fuzz::schemes::Scheme;

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz::signature_headers(Scheme::Paddle, data));
