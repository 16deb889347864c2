"""The interruption reconciler: long-polls the queue named by `INTERRUPTION_QUEUE` on the leader
and hands each message to the `MessageHandler`.

- Receives batches of 10 with a 20 s wait and does not wait for a batch to be handled before
  polling again; while batches come back full, up to `polls` receives are in flight. At most
  `max_in_flight` messages are held at once (more would outlive their visibility timeout) and
  `parallelism` are handled concurrently.
- A message is deleted only after it was handled (its NodeClaim deletion accepted): a crash in
  between leaves it in the queue and SQS redelivers it, which is harmless. While a message waits
  for a handler or is handled, its visibility timeout is extended every half timeout
  (ChangeMessageVisibility), so a slow handling on a loaded machine is not delivered a second
  time meanwhile; without that permission (Karpenter's policy lacks it) it is, harmlessly, and
  one log line says so. Unreadable messages are logged (first bytes), counted and deleted, so
  one cannot block the queue. A message whose handling failed stays and comes back after the
  visibility timeout.
- A queue that is missing or cannot be read is reported (an error log naming the queue and the
  cause, `karpy_interruption_queue_errors_total`) and retried with backoff; karpy keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Final, TypeVar

import structlog

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.interruption.handler import MessageHandler
from karpy.cloudprovider.aws.interruption.messages import MalformedMessageError, parse_message
from karpy.cloudprovider.aws.interruption.metrics import (
    DELETED_MESSAGES,
    MALFORMED_MESSAGES,
    MESSAGE_LATENCY,
    QUEUE_ERRORS,
    RECEIVED_MESSAGES,
)
from karpy.cloudprovider.aws.interruption.queue import QueueError, QueueMessage, SQSQueue
from karpy.kube import Clock
from karpy.kube.backoff import Backoff

__all__ = ["LOGGED_BODY_BYTES", "InterruptionController"]

log = structlog.get_logger("karpy.cloudprovider.aws.interruption")

LOGGED_BODY_BYTES: Final = 256
"""How much of an unreadable body goes into the log."""
ACCESS_DENIED_CODES: Final = frozenset({"AccessDenied", "AccessDeniedException"})

_T = TypeVar("_T")
_E = TypeVar("_E", bound=BaseException)


class _Stopped(Exception):
    pass


def _first(group: BaseExceptionGroup[_E], kind: type[_E]) -> _E:
    """The first exception of `kind` in a (possibly nested) group."""
    for exc in group.exceptions:
        found: _E = _first(exc, kind) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, kind):
            return found
    raise group


async def _unless_stopped(call: Awaitable[_T], stop: asyncio.Event) -> _T:
    """`call`'s result, or `_Stopped` (the call cancelled) once `stop` is set."""
    task = asyncio.ensure_future(call)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise _Stopped
    return task.result()


class InterruptionController:
    """A leader-only runnable reading one SQS queue."""

    def __init__(
        self,
        *,
        clients: AWSClients,
        queue: str,
        handler: MessageHandler,
        clock: Clock,
        parallelism: int = 20,
        polls: int = 3,
        max_in_flight: int = 40,
        wait_seconds: int = 20,
        visibility_timeout: int = 20,
        backoff: Backoff | None = None,
    ) -> None:
        self.clients = clients
        self.queue_name = queue
        self.handler = handler
        self.clock = clock
        self.wait_seconds = wait_seconds
        self.visibility_timeout = visibility_timeout
        self.backoff = backoff or Backoff(initial=1.0, maximum=60.0)
        self._handling = asyncio.Semaphore(parallelism)
        self._room = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self._watching = False
        self.polls = max(polls, 1)
        self._deep = asyncio.Event()
        self._extending = True

    def __repr__(self) -> str:
        return f"InterruptionController(queue={self.queue_name!r})"

    async def start(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    async with self.clients.client("sqs") as sqs:
                        queue = SQSQueue(
                            sqs,
                            self.queue_name,
                            wait_seconds=self.wait_seconds,
                            visibility_timeout=self.visibility_timeout,
                        )
                        await self._poll(queue, stop)
                except* QueueError as group:
                    self._report(_first(group, QueueError))
                except* Exception as group:  # an SDK or network failure outside the calls
                    exc = _first(group, Exception)
                    self._report(
                        QueueError(self.queue_name, "connect", type(exc).__name__, str(exc))
                    )
                if stop.is_set():
                    break
                delay = self.backoff.next()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
        finally:
            if self._tasks:  # let accepted messages finish: they are deleted only when done
                await asyncio.gather(*self._tasks, return_exceptions=True)

    def _report(self, exc: QueueError) -> None:
        QUEUE_ERRORS.labels(exc.operation, exc.code).inc()
        self._watching = False
        log.error(
            "interruption queue unavailable; retrying",
            queue=exc.queue,
            operation=exc.operation,
            code=exc.code,
            cause=exc.cause,
            hint="create the queue and its EventBridge rules, or fix INTERRUPTION_QUEUE "
            "and the sqs:GetQueueUrl/ReceiveMessage/DeleteMessage permissions"
            if exc.missing
            else None,
        )

    async def _poll(self, queue: SQSQueue, stop: asyncio.Event) -> None:
        """Run the pollers until `stop` (returns) or a queue call fails (raises)."""
        self._deep = asyncio.Event()
        async with asyncio.TaskGroup() as group:
            for index in range(self.polls):
                group.create_task(self._poller(queue, stop, extra=index > 0))

    async def _poller(self, queue: SQSQueue, stop: asyncio.Event, *, extra: bool) -> None:
        """One receive loop. The first always polls; the `extra` ones only while batches come
        back full, so a deep queue has several receives in flight and an idle one has one."""
        try:
            while not stop.is_set():
                if extra:
                    await _unless_stopped(self._deep.wait(), stop)
                await _unless_stopped(self._room.acquire(), stop)
                try:
                    batch = await _unless_stopped(queue.receive(), stop)
                finally:
                    self._room.release()
                if not self._watching:
                    self._watching = True
                    self.backoff.reset()
                    log.info("watching interruption queue", queue=self.queue_name)
                if len(batch) >= queue.batch:
                    self._deep.set()
                else:
                    self._deep.clear()
                for message in batch:
                    await _unless_stopped(self._room.acquire(), stop)
                    task = asyncio.create_task(self._process(queue, message))
                    self._tasks.add(task)
                    task.add_done_callback(self._done)
        except _Stopped:
            return

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._room.release()

    async def _process(self, queue: SQSQueue, raw: QueueMessage) -> None:
        keeper = asyncio.create_task(self._keep_invisible(queue, raw))
        try:
            await self._handle(queue, raw)
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)

    async def _keep_invisible(self, queue: SQSQueue, raw: QueueMessage) -> None:
        """Extend the message's visibility every half timeout until cancelled. A failure ends
        the extensions of this message; a refused permission ends them for the process."""
        while self._extending:
            await self.clock.sleep(self.visibility_timeout / 2)
            try:
                await queue.extend(raw)
            except QueueError as exc:
                QUEUE_ERRORS.labels(exc.operation, exc.code).inc()
                if exc.code in ACCESS_DENIED_CODES:
                    self._extending = False
                    log.info(
                        "cannot extend the visibility of interruption messages; a message "
                        "handled for longer than the timeout is delivered again (harmless)",
                        queue=self.queue_name,
                        code=exc.code,
                        hint="allow sqs:ChangeMessageVisibility on the queue",
                    )
                else:
                    log.debug("could not extend a message's visibility", error=str(exc))
                return

    async def _handle(self, queue: SQSQueue, raw: QueueMessage) -> None:
        async with self._handling:
            try:
                message = parse_message(raw.body)
            except MalformedMessageError as exc:
                MALFORMED_MESSAGES.inc()
                log.error(
                    "unreadable interruption message; deleting it",
                    queue=self.queue_name,
                    message_id=raw.message_id,
                    cause=str(exc),
                    body=raw.body[:LOGGED_BODY_BYTES],
                )
                await self._delete(queue, raw)
                return
            RECEIVED_MESSAGES.labels(str(message.kind)).inc()
            try:
                await self.handler.handle(message)
            except Exception as exc:
                log.error(
                    "handling interruption message failed; it will be delivered again",
                    queue=self.queue_name,
                    message_id=raw.message_id,
                    messageKind=str(message.kind),
                    error=str(exc) or type(exc).__name__,
                )
                return
            sent = raw.sent_at
            if sent is None and message.time is not None:
                sent = message.time.timestamp()
            if sent is not None:
                MESSAGE_LATENCY.observe(max(self.clock.wall().timestamp() - sent, 0.0))
            await self._delete(queue, raw)

    async def _delete(self, queue: SQSQueue, raw: QueueMessage) -> None:
        try:
            await queue.delete(raw)
        except QueueError as exc:
            QUEUE_ERRORS.labels(exc.operation, exc.code).inc()
            log.warning(
                "could not delete interruption message; it will be delivered again",
                queue=self.queue_name,
                message_id=raw.message_id,
                error=str(exc),
            )
            return
        DELETED_MESSAGES.inc()

    @property
    def in_flight(self) -> int:
        """Messages received and not yet finished."""
        return len(self._tasks)
