//! The worker protocol: every message round-trips, frames follow each other on a stream,
//! and damaged input is an error, never a panic or a huge allocation.

use std::borrow::Cow;
use std::io::Cursor;
use std::time::Duration;

use super::super::wire::{
    content_hash, decode, read_frame, write_frame, Arg, Bytes, Handle, Reply, Request, TargetSpec,
    WireErr,
};
use crate::backend::{DeviceInfo, KernelLimits, LaunchDims};
use crate::evaluate::Failure;
use crate::Error;

/// `message` as frame `id`, length prefix included.
fn frame<T: serde::Serialize>(id: u64, message: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, id, message).unwrap();
    let len = u64::from_le_bytes(out[..8].try_into().unwrap());
    assert_eq!(len as usize, out.len() - 8, "length prefix");
    out
}

fn requests() -> Vec<Request<'static>> {
    vec![
        Request::Open(TargetSpec::OpenCl("portable/cpu".into())),
        Request::Open(TargetSpec::Cuda("0".into())),
        Request::Open(TargetSpec::Fake(String::new())),
        Request::Compile {
            kernel: 7,
            source: Cow::Borrowed("__kernel void k(__global float* x) { x[0] = 1.0f; } // é"),
            name: Cow::Borrowed("k"),
            defines: Cow::Owned(vec![
                ("WPT".into(), "4".into()),
                ("EMPTY".into(), String::new()),
            ]),
            options: Cow::Owned(vec!["-cl-mad-enable".into()]),
        },
        Request::Compile {
            kernel: u64::MAX,
            source: Cow::Borrowed(""),
            name: Cow::Borrowed(""),
            defines: Cow::Owned(vec![]),
            options: Cow::Owned(vec![]),
        },
        Request::Alloc {
            buffer: 3,
            bytes: 1 << 33,
            zeroed: true,
        },
        Request::Alloc {
            buffer: 4,
            bytes: 1,
            zeroed: false,
        },
        Request::Write {
            buffer: 3,
            hash: 0xDEAD_BEEF,
            data: Some(Bytes(Cow::Owned((0..=255).collect()))),
        },
        Request::Write {
            buffer: 3,
            hash: 1,
            data: Some(Bytes(Cow::Borrowed(&[]))),
        },
        Request::Write {
            buffer: 3,
            hash: u64::MAX,
            data: None,
        },
        Request::Read {
            buffer: 9,
            len: 4096,
        },
        Request::Launch {
            kernel: 7,
            dims: LaunchDims {
                dims: 2,
                global: [1024, 512, 1],
                local: Some([16, 8, 1]),
                dynamic_local_bytes: 4096,
            },
            args: vec![
                Arg::Buffer(3),
                Arg::Scalar(Bytes(Cow::Owned(5i32.to_ne_bytes().to_vec()))),
                Arg::Local(256),
            ],
            count: 10,
        },
        Request::Launch {
            kernel: 1,
            dims: LaunchDims {
                dims: 1,
                global: [1, 1, 1],
                local: None,
                dynamic_local_bytes: 0,
            },
            args: vec![],
            count: 1,
        },
        Request::Free(Handle::Kernel(7)),
        Request::Free(Handle::Buffer(3)),
    ]
}

fn replies() -> Vec<Reply> {
    let info = super::fake_backend("").unwrap().info;
    vec![
        Reply::Opened(info),
        Reply::Opened(DeviceInfo::default()),
        Reply::Compiled(KernelLimits {
            max_work_group_size: Some(256),
            local_mem_bytes: Some(0),
            registers: Some(64),
            private_mem_bytes: Some(16),
            preferred_multiple: Some(32),
        }),
        Reply::Compiled(KernelLimits::default()),
        Reply::Done,
        Reply::Missing,
        Reply::Data(vec![]),
        Reply::Data((0..1000u32).map(|i| i as u8).collect()),
        Reply::Time(Duration::from_nanos(123_456_789)),
        Reply::Failed(Failure::Invalid("too big".into())),
        Reply::Failed(Failure::rejected(
            crate::evaluate::Cause::Registers,
            "255 registers",
        )),
        Reply::Failed(Failure::Compile("error: x".into())),
        Reply::Failed(Failure::Launch("CL_OUT_OF_RESOURCES".into())),
        Reply::Failed(Failure::WrongResult("1 of 2".into())),
        Reply::Failed(Failure::Timeout(Duration::from_millis(2500))),
        Reply::Failed(Failure::Other(String::new())),
        Reply::Error(WireErr::Unavailable {
            backend: "cuda".into(),
            reason: "no driver".into(),
        }),
        Reply::Error(WireErr::NotFound {
            backend: "opencl".into(),
            query: "nvidia".into(),
            available: "0: pocl".into(),
        }),
        Reply::Error(WireErr::Backend {
            backend: "opencl".into(),
            message: "allocating".into(),
        }),
        Reply::Unhealthy("sticky".into()),
    ]
}

#[test]
fn every_request_round_trips() {
    for (i, req) in requests().into_iter().enumerate() {
        let bytes = frame(i as u64 + 1, &req);
        let body = read_frame(&mut Cursor::new(&bytes)).unwrap().unwrap();
        let (id, back) = decode::<Request<'static>>(&body).unwrap();
        assert_eq!(id, i as u64 + 1);
        assert_eq!(back, req);
    }
}

#[test]
fn every_reply_round_trips() {
    for (i, reply) in replies().into_iter().enumerate() {
        let bytes = frame(i as u64, &reply);
        let body = read_frame(&mut Cursor::new(&bytes)).unwrap().unwrap();
        let (id, back) = decode::<Reply>(&body).unwrap();
        assert_eq!(id, i as u64);
        assert_eq!(back, reply);
    }
}

#[test]
fn buffer_contents_are_one_byte_string() {
    // 1 MiB of contents cost 1 MiB and a few bytes, not a number per byte.
    let data = vec![0xFFu8; 1 << 20];
    let req = Request::Write {
        buffer: 1,
        hash: 2,
        data: Some(Bytes(Cow::Borrowed(&data))),
    };
    assert!(frame(1, &req).len() < (1 << 20) + 32);
    assert!(frame(1, &Reply::Data(data)).len() < (1 << 20) + 32);
}

#[test]
fn frames_follow_each_other_on_a_stream() {
    let mut stream = Vec::new();
    for (i, req) in requests().iter().enumerate() {
        stream.extend(frame(i as u64, req));
    }
    let mut r = Cursor::new(&stream);
    let mut n = 0;
    while let Some(body) = read_frame(&mut r).unwrap() {
        assert_eq!(decode::<Request<'static>>(&body).unwrap().0, n);
        n += 1;
    }
    assert_eq!(n as usize, requests().len());
}

#[test]
fn errors_cross_the_boundary_with_their_kind() {
    let all = [
        Error::BackendUnavailable {
            backend: "cuda".into(),
            reason: "no libcuda".into(),
        },
        Error::DeviceNotFound {
            backend: "opencl".into(),
            query: "x".into(),
            available: "0: a".into(),
        },
        Error::Backend {
            backend: "opencl".into(),
            message: "m".into(),
        },
    ];
    for e in all {
        let back = Error::from(WireErr::from(&e));
        assert_eq!(back.to_string(), e.to_string());
        assert_eq!(
            std::mem::discriminant(&back),
            std::mem::discriminant(&e),
            "{e}"
        );
    }
    let other = Error::KernelSpec("no global size".into());
    match Error::from(WireErr::from(&other)) {
        Error::Backend { message, .. } => assert!(message.contains("no global size")),
        e => panic!("{e:?}"),
    }
}

#[cfg(feature = "opencl")]
#[test]
fn opencl_errors_cross_with_their_code() {
    let e = Error::OpenCl {
        context: "allocating 8 bytes".into(),
        source: opencl3::error_codes::ClError(-4),
    };
    let back = Error::from(WireErr::from(&e));
    assert_eq!(back.to_string(), e.to_string());
    assert!(
        matches!(
            back,
            Error::OpenCl {
                source: opencl3::error_codes::ClError(-4),
                ..
            }
        ),
        "{back:?}"
    );
}

#[test]
fn bad_frames_are_errors_not_panics() {
    // Every truncation of every message, and a byte too many.
    for req in requests() {
        let bytes = frame(1, &req);
        let body = &bytes[8..];
        for cut in 0..body.len() {
            assert!(
                decode::<Request<'static>>(&body[..cut]).is_err(),
                "{req:?} cut at {cut}"
            );
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert!(decode::<Request<'static>>(&longer).is_err());
    }
    for reply in replies() {
        let bytes = frame(1, &reply);
        let body = &bytes[8..];
        for cut in 0..body.len() {
            assert!(
                decode::<Reply>(&body[..cut]).is_err(),
                "{reply:?} cut at {cut}"
            );
        }
    }
    // An unknown variant, a bad boolean, a list longer than the message.
    assert!(decode::<Request<'static>>(&[1, 200]).is_err());
    assert!(decode::<Reply>(&[1, 200]).is_err());
    let alloc = frame(
        1,
        &Request::Alloc {
            buffer: 1,
            bytes: 1,
            zeroed: true,
        },
    );
    let mut bad_bool = alloc[8..].to_vec();
    *bad_bool.last_mut().unwrap() = 7;
    assert!(decode::<Request<'static>>(&bad_bool).is_err());
    // Frame 1: Compile (variant 1) of kernel 1 with empty source and name, then 2^63 - 1
    // defines.
    let mut huge_list = vec![1u8, 1, 1, 0, 0];
    huge_list.extend([0xFF; 8]);
    huge_list.push(0x7F);
    assert!(decode::<Request<'static>>(&huge_list).is_err());
    // Streams: empty, cut inside the length, cut inside the frame, an absurd length.
    assert!(read_frame(&mut Cursor::new(Vec::<u8>::new()))
        .unwrap()
        .is_none());
    assert!(read_frame(&mut Cursor::new(vec![1u8, 0, 0])).is_err());
    let mut cut = 100u64.to_le_bytes().to_vec();
    cut.extend([0u8; 10]);
    assert!(read_frame(&mut Cursor::new(cut)).is_err());
    assert!(read_frame(&mut Cursor::new(u64::MAX.to_le_bytes().to_vec())).is_err());
    // Noise.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for len in 0..3000usize {
        let bytes: Vec<u8> = (0..len % 97)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = decode::<Request<'static>>(&bytes);
        let _ = decode::<Reply>(&bytes);
    }
}

#[test]
fn write_errors_keep_their_cause() {
    struct Closed;
    impl std::io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let e = write_frame(&mut Closed, 1, &Reply::Done).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    let mut w = std::io::BufWriter::new(Closed);
    let e = write_frame(&mut w, 1, &Reply::Data(vec![1; 1 << 20])).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
}

#[test]
fn content_hashes_depend_on_every_byte_and_the_length() {
    let data: Vec<u8> = (0..100u8).collect();
    let h = content_hash(&data);
    assert_eq!(h, content_hash(&data.clone()));
    for i in 0..data.len() {
        let mut d = data.clone();
        d[i] ^= 1;
        assert_ne!(content_hash(&d), h, "byte {i}");
    }
    let mut seen = std::collections::HashSet::new();
    for n in 0..200 {
        assert!(
            seen.insert(content_hash(&vec![0u8; n])),
            "zeros of length {n}"
        );
    }
}
