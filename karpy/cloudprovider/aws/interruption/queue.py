"""The interruption queue as the reconciler sees it: receive a batch, keep a message invisible
while it is handled, delete one message.

`INTERRUPTION_QUEUE` may be a queue name (resolved with GetQueueUrl in the cluster's region, as
Karpenter does) or a queue URL (used as given). Every failure surfaces as `QueueError`, which
names the queue, the operation and the cause, so the reconciler can report and retry it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from karpy.cloudprovider.aws.errors import error_code, error_message

__all__ = ["QueueError", "QueueMessage", "SQSQueue"]

NO_SUCH_QUEUE_CODES: Final = frozenset(
    {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
)


class QueueError(Exception):
    """A call to the queue failed; `code` is AWS's error code (or the exception's type)."""

    def __init__(self, queue: str, operation: str, code: str, cause: str) -> None:
        super().__init__(f"interruption queue {queue!r}: {operation} failed: {code}: {cause}")
        self.queue = queue
        self.operation = operation
        self.code = code
        self.cause = cause

    @property
    def missing(self) -> bool:
        """The queue does not exist (or this identity may not see it)."""
        return self.code in NO_SUCH_QUEUE_CODES


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """One received message: its body, receipt handle and SQS's SentTimestamp (seconds)."""

    message_id: str
    receipt_handle: str
    body: str
    sent_at: float | None


def _is_url(name_or_url: str) -> bool:
    return name_or_url.startswith(("https://", "http://"))


class SQSQueue:
    """One queue over one live aiobotocore SQS client (the caller owns the client)."""

    def __init__(
        self,
        client: Any,
        name_or_url: str,
        *,
        wait_seconds: int = 20,
        batch: int = 10,
        visibility_timeout: int = 20,
    ) -> None:
        self._client = client
        self.name = name_or_url
        self._url: str | None = name_or_url if _is_url(name_or_url) else None
        self.wait_seconds = wait_seconds
        self.batch = batch
        self.visibility_timeout = visibility_timeout

    def _error(self, operation: str, exc: Exception) -> QueueError:
        code = error_code(exc) or type(exc).__name__
        if code in NO_SUCH_QUEUE_CODES and not _is_url(self.name):
            self._url = None  # a re-created queue may get another URL
        return QueueError(self.name, operation, code, error_message(exc) or repr(exc))

    async def url(self) -> str:
        if self._url is None:
            try:
                response = await self._client.get_queue_url(QueueName=self.name)
            except Exception as exc:  # ClientError, connection and SDK errors alike
                raise self._error("GetQueueUrl", exc) from exc
            self._url = str(response["QueueUrl"])
        return self._url

    async def receive(self) -> list[QueueMessage]:
        """Long-poll one batch (empty after `wait_seconds` without messages)."""
        url = await self.url()
        try:
            response = await self._client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=self.batch,
                VisibilityTimeout=self.visibility_timeout,
                WaitTimeSeconds=self.wait_seconds,
                MessageSystemAttributeNames=["SentTimestamp"],
                MessageAttributeNames=["All"],
            )
        except Exception as exc:  # ClientError, connection and SDK errors alike
            raise self._error("ReceiveMessage", exc) from exc
        out = []
        for raw in response.get("Messages") or ():
            sent = (raw.get("Attributes") or {}).get("SentTimestamp")
            out.append(
                QueueMessage(
                    message_id=str(raw.get("MessageId") or ""),
                    receipt_handle=str(raw["ReceiptHandle"]),
                    body=str(raw.get("Body") or ""),
                    sent_at=int(sent) / 1000.0 if sent and str(sent).isdigit() else None,
                )
            )
        return out

    async def delete(self, message: QueueMessage) -> None:
        url = await self.url()
        try:
            await self._client.delete_message(QueueUrl=url, ReceiptHandle=message.receipt_handle)
        except Exception as exc:  # ClientError, connection and SDK errors alike
            raise self._error("DeleteMessage", exc) from exc

    async def extend(self, message: QueueMessage) -> None:
        """Make the message invisible for another `visibility_timeout` seconds from now."""
        url = await self.url()
        try:
            await self._client.change_message_visibility(
                QueueUrl=url,
                ReceiptHandle=message.receipt_handle,
                VisibilityTimeout=self.visibility_timeout,
            )
        except Exception as exc:  # ClientError, connection and SDK errors alike
            raise self._error("ChangeMessageVisibility", exc) from exc
