//! A stream whose items an operation's own loop produces, driven by the caller: the loop is a
//! future that hands each item to an [`Emit`] and returns a summary at its end. Polling the
//! stream polls that future, so it runs only while the caller asks for the next item (an
//! item waits in `emit` until the caller took it: no item is produced ahead of the caller),
//! and dropping the stream drops the future: cancelling is dropping.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{SinkExt, Stream, StreamExt};

use crate::error::Result;

/// Where a producing loop hands its items: the stream's caller, or a vector (a caller that
/// collects them all, such as `history`).
pub(crate) enum Emit<'v, T> {
    /// To the caller of a [`Produced`] stream.
    To(mpsc::Sender<T>),
    /// Into a vector.
    Into(&'v mut Vec<T>),
}

impl<T> Emit<'_, T> {
    /// Hands `item` over; returns once the stream's caller took it.
    pub(crate) async fn emit(&mut self, item: T) {
        match self {
            // Fails only when the stream is dropped, and this loop with it: nothing to do.
            Emit::To(items) => {
                let _ = items.send(item).await;
            }
            Emit::Into(items) => items.push(item),
        }
    }
}

/// The items a producing loop emits, then its error or, once it ended well, its summary
/// ([`Produced::summary`]).
pub(crate) struct Produced<'a, T, S> {
    /// The loop, until it ended.
    producer: Option<BoxFuture<'a, Result<S>>>,
    items: mpsc::Receiver<T>,
    /// How the loop ended, held until every item it emitted was taken.
    end: Option<Result<S>>,
    summary: Option<S>,
}

impl<'a, T: Send + 'a, S: Send + 'a> Produced<'a, T, S> {
    /// The stream of the loop `produce` makes with the [`Emit`] it is given.
    pub(crate) fn new<F>(produce: impl FnOnce(Emit<'a, T>) -> F) -> Self
    where
        F: Future<Output = Result<S>> + Send + 'a,
    {
        // No buffer: a send completes when the receiver took the item.
        let (sender, items) = mpsc::channel(0);
        Produced {
            producer: Some(Box::pin(produce(Emit::To(sender)))),
            items,
            end: None,
            summary: None,
        }
    }
}

impl<T, S> Produced<'_, T, S> {
    /// The loop's summary, once the stream ended (gave `None`) without an error.
    pub(crate) fn summary(&self) -> Option<&S> {
        self.summary.as_ref()
    }
}

impl<T, S: Unpin> Stream for Produced<'_, T, S> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        if let Some(producer) = this.producer.as_mut()
            && let Poll::Ready(end) = producer.as_mut().poll(cx)
        {
            // Dropping the loop drops its sender: the channel ends after its last item.
            this.producer = None;
            this.end = Some(end);
        }
        match this.items.poll_next_unpin(cx) {
            Poll::Ready(Some(item)) => return Poll::Ready(Some(Ok(item))),
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {}
        }
        match this.end.take() {
            Some(Ok(summary)) => {
                this.summary = Some(summary);
                Poll::Ready(None)
            }
            Some(Err(err)) => Poll::Ready(Some(Err(err))),
            None => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::Error;

    /// A loop that emits 1, 2, 3 and counts how far it got; `fail`: it ends in an error.
    fn counting(progress: Arc<AtomicUsize>, fail: bool) -> Produced<'static, u32, &'static str> {
        Produced::new(move |mut emit| async move {
            for n in 1..=3 {
                progress.store(n as usize, Ordering::SeqCst);
                emit.emit(n).await;
            }
            progress.store(4, Ordering::SeqCst);
            if fail {
                return Err(Error::Refused {
                    reason: "the loop failed".into(),
                });
            }
            Ok("done")
        })
    }

    #[tokio::test]
    async fn items_come_in_order_then_the_summary_and_nothing_runs_ahead_of_the_caller() {
        let progress = Arc::new(AtomicUsize::new(0));
        let mut stream = counting(progress.clone(), false);
        assert_eq!(progress.load(Ordering::SeqCst), 0, "started before asked");
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        // The loop waits in `emit` for the caller: it did not go on to the next item.
        assert_eq!(progress.load(Ordering::SeqCst), 1);
        assert_eq!(stream.summary(), None);
        assert_eq!(stream.next().await.unwrap().unwrap(), 2);
        assert_eq!(stream.next().await.unwrap().unwrap(), 3);
        assert!(stream.next().await.is_none());
        assert_eq!(progress.load(Ordering::SeqCst), 4);
        assert_eq!(stream.summary(), Some(&"done"));
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn an_error_comes_after_the_items_emitted_before_it_and_ends_the_stream() {
        let progress = Arc::new(AtomicUsize::new(0));
        let mut stream = counting(progress, true);
        let mut items = Vec::new();
        let err = loop {
            match stream.next().await.unwrap() {
                Ok(n) => items.push(n),
                Err(err) => break err,
            }
        };
        assert_eq!(items, [1, 2, 3]);
        assert_eq!(err.to_string(), "refused: the loop failed");
        assert!(stream.next().await.is_none());
        assert_eq!(stream.summary(), None);
    }

    #[tokio::test]
    async fn dropping_the_stream_cancels_the_loop() {
        let progress = Arc::new(AtomicUsize::new(0));
        let mut stream = counting(progress.clone(), false);
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        drop(stream);
        tokio::task::yield_now().await;
        assert_eq!(progress.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_collecting_emit_keeps_every_item() {
        let mut items = Vec::new();
        let mut emit = Emit::Into(&mut items);
        emit.emit(1).await;
        emit.emit(2).await;
        assert_eq!(items, [1, 2]);
    }
}
