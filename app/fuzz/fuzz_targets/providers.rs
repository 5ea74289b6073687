#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz::providers(data));
