//! [`Upload`]: a streaming upload that becomes visible only when completed.

use bytes::Bytes;

use crate::local::LocalUpload;
use crate::object::ObjectUpload;
use crate::{ObjectInfo, Result};

/// A streaming upload in progress. Memory is bounded by a few part sizes.
///
/// Dropping an upload without [`complete`](Upload::complete) or [`abort`](Upload::abort)
/// (an error path, a cancelled future) abandons it: a local temporary file is removed at
/// once; an object-store multipart upload is aborted before the drop returns on a
/// multi-threaded tokio runtime (waiting at most 10 s), in the background on a
/// current-thread one. A killed process leaves its upload open (object_store cannot list open
/// multipart uploads to clean them later): configure a lifecycle rule that aborts incomplete
/// multipart uploads after a day.
#[derive(Debug)]
pub struct Upload {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Local(LocalUpload),
    Object(ObjectUpload),
}

impl Upload {
    pub(crate) fn local(upload: LocalUpload) -> Upload {
        Upload {
            inner: Inner::Local(upload),
        }
    }

    pub(crate) fn object(upload: ObjectUpload) -> Upload {
        Upload {
            inner: Inner::Object(upload),
        }
    }

    /// Appends bytes. On object stores a full part starts uploading in the background; this
    /// waits while two parts are already in flight.
    pub async fn write(&mut self, chunk: Bytes) -> Result<()> {
        match &mut self.inner {
            Inner::Local(u) => u.write(chunk).await,
            Inner::Object(u) => u.write(chunk).await,
        }
    }

    /// Makes the object visible under its final name, durably (local: fsync file, rename,
    /// fsync directory; object stores: upload the last part and complete the multipart
    /// upload). On failure nothing is left under the final name (local) and the multipart
    /// upload is aborted (object stores).
    pub async fn complete(self) -> Result<ObjectInfo> {
        match self.inner {
            Inner::Local(u) => u.complete().await,
            Inner::Object(u) => u.complete().await,
        }
    }

    /// Abandons the upload, removing what was written (local temp file, multipart parts).
    pub async fn abort(self) -> Result<()> {
        match self.inner {
            Inner::Local(u) => u.abort().await,
            Inner::Object(u) => u.abort().await,
        }
    }
}
