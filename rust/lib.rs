//! Wire and media core of iax-node.
//!
//! Everything here is plain Rust that `cargo test` exercises without Python. The PyO3 layer
//! lives only under `binding/` and is compiled when the `python` feature is on (maturin sets
//! it), so the kernels never see a Python type.

pub mod codec;
pub mod device;
pub mod dtmf;
pub mod echolink;
pub mod engine;
pub mod fir;
pub mod frame;
pub mod gsm;
pub mod ie;
pub mod inband;
pub mod ipv4;
pub mod jitter;
pub mod level;
pub mod loudness;
pub mod media;
pub mod mixer;
pub mod parrot;
pub mod player;
pub mod polyphase;
pub mod ratio;
pub mod resample;
pub mod tone;
pub mod transport;
pub mod usrp;
pub mod vox;
pub mod wire_error;
pub mod wireguard;

#[cfg(test)]
mod test_signal;

#[cfg(feature = "python")]
mod binding;
