"""The interruption reconciler on the local control plane with moto's SQS (and EventBridge):
messages act on the NodeClaims of their instances, every message is deleted once handled and
only then, unreadable and foreign ones change nothing, and a missing queue is reported and
retried until it appears.

NodeClaims here carry the termination finalizer and no controller removes it, so a deletion
shows as a `deletionTimestamp` that stays for the test to read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
import structlog
from kubetest import Kubectl

from karpy.apis.aws.v1.ec2nodeclass import CapacityReservationSelectorTerm
from karpy.apis.descriptors import NODECLAIMS
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError
from karpy.cloudprovider.aws.interruption import (
    InterruptionController,
    Message,
    MessageHandler,
    parse_message,
)
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.kube import Cache, Client, EventRecorder, RealClock
from karpy.kube.backoff import Backoff
from karpy.kube.metrics import REGISTRY
from tests.integration.aws.conftest import REGION, CallCounter
from tests.integration.aws.ec2answers import FakeReservations, answer_ec2, reservation
from tests.kit import node, nodeclaim
from tests.kit.interruption import (
    body,
    rebalance_recommendation,
    reservation_interruption,
    scheduled_change,
    spot_interruption,
    state_change,
)

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")

JSON = dict[str, Any]
QUEUE = "interruptions"
ZONE = "us-east-1a"
TYPE = "m5.large"
CREDS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def sample(name: str, labels: Mapping[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, dict(labels or {})) or 0.0


def sqs(endpoint: str) -> Any:
    return boto3.client("sqs", endpoint_url=endpoint, region_name=REGION, **CREDS)


def queue_depth(endpoint: str, url: str) -> tuple[int, int]:
    attrs = sqs(endpoint).get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attrs["ApproximateNumberOfMessages"]),
        int(attrs["ApproximateNumberOfMessagesNotVisible"]),
    )


async def eventually(check: Callable[[], Any], *, within: float = 30.0, what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def launched(kubectl: Kubectl, name: str, instance: str, *, capacity: str = "spot") -> None:
    """A NodeClaim launched as `instance`, and its registered Node."""
    claim = nodeclaim(name)
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    claim["metadata"]["labels"].update(
        {
            "karpenter.sh/capacity-type": capacity,
            "node.kubernetes.io/instance-type": TYPE,
            "topology.kubernetes.io/zone": ZONE,
        }
    )
    kubectl.apply(claim)
    status = {"status": {"providerID": f"aws:///{ZONE}/{instance}"}}
    kubectl(
        "patch", "nodeclaim", name, "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    kubectl.apply(node(f"node-{name}", provider_id=f"aws:///{ZONE}/{instance}"))


def claim_of(kubectl: Kubectl, name: str) -> JSON:
    found: JSON = kubectl.json("get", "nodeclaim", name)
    return found


def deleting(kubectl: Kubectl, name: str) -> bool:
    return bool(claim_of(kubectl, name)["metadata"].get("deletionTimestamp"))


def disruption_reason(kubectl: Kubectl, name: str) -> str | None:
    for c in (claim_of(kubectl, name).get("status") or {}).get("conditions") or []:
        if c["type"] == "DisruptionReason" and c["status"] == "True":
            return str(c["reason"])
    return None


def event_reasons(kubectl: Kubectl, name: str) -> set[str]:
    found = kubectl.json("get", "events", "-A", "--field-selector", f"involvedObject.name={name}")
    return {e["reason"] for e in found["items"]}


@dataclass
class Env:
    endpoint: str
    url: str
    kubectl: Kubectl
    client: Client
    cache: Cache
    events: EventRecorder
    disrupted: list[tuple[str, str]] = field(default_factory=list)
    tasks: list[tuple[asyncio.Event, asyncio.Task[None]]] = field(default_factory=list)

    def send(self, message: JSON | str) -> None:
        text = message if isinstance(message, str) else body(message)
        sqs(self.endpoint).send_message(QueueUrl=self.url, MessageBody=text)

    def handler(
        self, unavailable: UnavailableOfferings, reservations: CapacityReservations | None = None
    ) -> MessageHandler:
        return MessageHandler(
            client=self.client,
            cache=self.cache,
            events=self.events,
            unavailable=unavailable,
            clock=RealClock(),
            on_disrupted=lambda claim, reason: self.disrupted.append(
                (claim["metadata"]["name"], reason)
            ),
            reservations=reservations,
        )

    def start(
        self,
        handler: MessageHandler,
        *,
        queue: str = QUEUE,
        clients: AWSClients | None = None,
        visibility_timeout: int = 20,
    ) -> InterruptionController:
        controller = InterruptionController(
            clients=clients or AWSClients(REGION, endpoint_url=self.endpoint),
            queue=queue,
            handler=handler,
            clock=RealClock(),
            wait_seconds=1,
            visibility_timeout=visibility_timeout,
            backoff=Backoff(initial=0.2, maximum=0.5),
        )
        stop = asyncio.Event()
        self.tasks.append((stop, asyncio.create_task(controller.start(stop))))
        return controller

    async def stop_all(self) -> None:
        for stop, task in self.tasks:
            stop.set()
            await asyncio.wait_for(task, 15)
        self.tasks.clear()

    async def drained(self, *, within: float = 30.0) -> None:
        """Empty on two readings half a second apart. moto counts visible and in-flight
        messages at two instants, so a message whose visibility runs out between them is in
        neither count: one (0, 0) can be a message that is still there."""
        while True:
            await eventually(
                lambda: queue_depth(self.endpoint, self.url) == (0, 0),
                within=within,
                what="the queue to be empty",
            )
            await asyncio.sleep(0.5)
            if queue_depth(self.endpoint, self.url) == (0, 0):
                return


@pytest.fixture
async def env(moto_endpoint: str, kubeconfig: str, kubectl: Kubectl) -> AsyncIterator[Env]:
    url = sqs(moto_endpoint).create_queue(QueueName=QUEUE)["QueueUrl"]
    client = await Client.connect(kubeconfig=kubeconfig)
    cache = Cache(client)
    events = EventRecorder(client)
    stop = asyncio.Event()
    environment = Env(moto_endpoint, url, kubectl, client, cache, events)
    environment.handler(UnavailableOfferings())  # registers the informers and indexes
    cache_task = asyncio.create_task(cache.start(stop))
    events_task = asyncio.create_task(events.start(stop))
    await cache.wait_for_sync()
    try:
        yield environment
    finally:
        await environment.stop_all()
        stop.set()
        await asyncio.wait_for(asyncio.gather(cache_task, events_task), 10)
        await client.close()


async def seen(env: Env, name: str, instance: str) -> None:
    """Wait until the cache has the NodeClaim with its providerID."""
    informer = env.cache.informer(NODECLAIMS)
    await eventually(
        lambda: instance in str(((informer.get(name) or {}).get("status") or {}).get("providerID")),
        what=f"the cache to see {name}",
    )


async def test_a_spot_interruption_deletes_the_nodeclaim_and_marks_the_offering(
    env: Env, kubectl: Kubectl
) -> None:
    launched(kubectl, "spot-a", "i-0aaa")
    launched(kubectl, "spot-b", "i-0bbb")
    await seen(env, "spot-b", "i-0bbb")
    before = {
        "received": sample(
            "karpenter_interruption_received_messages_total", {"message_type": "spot_interrupted"}
        ),
        "deleted": sample("karpenter_interruption_deleted_messages_total"),
        "actions": sample(
            "karpenter_interruption_actions_performed_total",
            {"action_type": "CordonAndDrain", "nodepool": "pool"},
        ),
        "latency": sample("karpenter_interruption_message_queue_duration_seconds_count"),
    }
    unavailable = UnavailableOfferings()
    env.start(env.handler(unavailable))
    env.send(spot_interruption("i-0aaa"))

    await eventually(lambda: deleting(kubectl, "spot-a"), what="spot-a deleting")
    await env.drained()
    assert disruption_reason(kubectl, "spot-a") == "spot_interrupted"
    assert not deleting(kubectl, "spot-b")
    assert unavailable.is_unavailable("spot", TYPE, ZONE)
    assert not unavailable.is_unavailable("on-demand", TYPE, ZONE)
    assert env.disrupted == [("spot-a", "spot_interrupted")]
    await eventually(
        lambda: (
            {"SpotInterrupted", "TerminatingOnInterruption"} <= event_reasons(kubectl, "spot-a")
        ),
        what="events on the NodeClaim",
    )
    await eventually(
        lambda: (
            {"SpotInterrupted", "TerminatingOnInterruption"}
            <= event_reasons(kubectl, "node-spot-a")
        ),
        what="events on the Node",
    )
    assert (
        sample(
            "karpenter_interruption_received_messages_total", {"message_type": "spot_interrupted"}
        )
        == before["received"] + 1
    )
    assert sample("karpenter_interruption_deleted_messages_total") == before["deleted"] + 1
    assert (
        sample(
            "karpenter_interruption_actions_performed_total",
            {"action_type": "CordonAndDrain", "nodepool": "pool"},
        )
        == before["actions"] + 1
    )
    assert (
        sample("karpenter_interruption_message_queue_duration_seconds_count")
        == before["latency"] + 1
    )


async def test_a_reservation_interruption_drains_and_stops_launches_into_it(
    env: Env, kubectl: Kubectl
) -> None:
    launched(kubectl, "reserved-a", "i-0ccc", capacity="reserved")
    kubectl("label", "nodeclaim", "reserved-a", "karpenter.k8s.aws/capacity-reservation-id=cr-1")
    informer = env.cache.informer(NODECLAIMS)
    await eventually(
        lambda: "cr-1" in str((informer.get("reserved-a") or {}).get("metadata")),
        what="the cache to see the reservation label",
    )
    await seen(env, "reserved-a", "i-0ccc")
    counter = CallCounter()
    answer_ec2(counter, reservations=FakeReservations([reservation("cr-1", available=3)]))
    clients = AWSClients(REGION, endpoint_url=env.endpoint, on_client=counter.hook)
    reservations = CapacityReservations(clients)
    term = CapacityReservationSelectorTerm.model_validate({"id": "cr-1"})
    assert [r["CapacityReservationId"] for r in await reservations.select([term])] == ["cr-1"]
    assert reservations.available("cr-1") == 3
    env.start(env.handler(UnavailableOfferings(), reservations))
    env.send(reservation_interruption("i-0ccc"))

    await eventually(lambda: deleting(kubectl, "reserved-a"), what="reserved-a deleting")
    await env.drained()
    assert disruption_reason(kubectl, "reserved-a") == "capacity_reservation_interrupted"
    assert reservations.available("cr-1") == 0
    await eventually(
        lambda: (
            {"CapacityReservationInstanceInterrupted", "TerminatingOnInterruption"}
            <= event_reasons(kubectl, "reserved-a")
        ),
        what="events on the NodeClaim",
    )


async def test_eventbridge_rules_deliver_each_kind_and_each_does_what_karpenter_does(
    env: Env, kubectl: Kubectl
) -> None:
    """The four rules Karpenter documents, targeting the queue; events put on the bus."""
    events = boto3.client("events", endpoint_url=env.endpoint, region_name=REGION, **CREDS)
    arn = sqs(env.endpoint).get_queue_attributes(QueueUrl=env.url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    rules = {
        "ScheduledChangeRule": ("aws.health", "AWS Health Event"),
        "SpotInterruptionRule": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        "RebalanceRule": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        "InstanceStateChangeRule": ("aws.ec2", "EC2 Instance State-change Notification"),
    }
    for rule, (source, detail_type) in rules.items():
        pattern = {"source": [source], "detail-type": [detail_type]}
        events.put_rule(Name=rule, EventPattern=json.dumps(pattern))
        events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": arn}])
    claims = {
        "stopping": "i-0001",
        "terminated": "i-0002",
        "retiring": "i-0003",
        "rebalanced": "i-0004",
        "running": "i-0005",
    }
    for name, instance in claims.items():
        launched(kubectl, name, instance, capacity="on-demand")
    await seen(env, "running", "i-0005")
    unavailable = UnavailableOfferings()
    env.start(env.handler(unavailable))
    for message in (
        state_change("i-0001", "stopping"),
        state_change("i-0002", "terminated"),
        scheduled_change("i-0003"),
        rebalance_recommendation("i-0004"),
        state_change("i-0005", "running"),
    ):
        entry = {
            "Source": message["source"],
            "DetailType": message["detail-type"],
            "Detail": json.dumps(message["detail"]),
        }
        assert events.put_events(Entries=[entry])["FailedEntryCount"] == 0

    await eventually(
        lambda: all(deleting(kubectl, n) for n in ("stopping", "terminated", "retiring")),
        what="the stopped, terminated and retiring NodeClaims deleting",
    )
    await env.drained()
    assert disruption_reason(kubectl, "stopping") == "instance_stopped"
    assert disruption_reason(kubectl, "terminated") == "instance_terminated"
    assert disruption_reason(kubectl, "retiring") == "scheduled_change"
    assert not deleting(kubectl, "rebalanced")
    assert not deleting(kubectl, "running")
    assert len(unavailable) == 0  # only spot interruptions mark offerings
    await eventually(
        lambda: "SpotRebalanceRecommendation" in event_reasons(kubectl, "rebalanced"),
        what="the rebalance event",
    )
    expected = {
        "stopping": "InstanceStopping",
        "terminated": "InstanceTerminating",
        "retiring": "InstanceUnhealthy",
    }
    for name, reason in expected.items():
        await eventually(
            lambda n=name, r=reason: r in event_reasons(kubectl, n), what=f"{reason} on {name}"
        )


FOREIGN_AND_MALFORMED: list[tuple[str, str | JSON, bool]] = [
    ("not json", "this is not json {", True),
    ("wrong envelope", json.dumps({"Type": "Notification", "Message": "hello"}), True),
    ("missing fields", json.dumps({**spot_interruption("i-0aaa"), "detail": {}}), True),
    ("huge body", json.dumps({"padding": "x" * 250_000}), True),
    ("unknown detail-type", spot_interruption("i-0aaa") | {"detail-type": "Something Else"}, False),
    ("unknown instance", spot_interruption("i-0fff"), False),
    ("another cluster's instance", state_change("i-0eee", "terminated"), False),
    ("running state", state_change("i-0aaa", "running"), False),
]


async def test_malformed_and_foreign_messages_are_deleted_counted_and_change_nothing(
    env: Env, kubectl: Kubectl
) -> None:
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    version = claim_of(kubectl, "spot-a")["metadata"]["resourceVersion"]
    malformed = sample("karpy_interruption_malformed_messages_total")
    deleted = sample("karpenter_interruption_deleted_messages_total")
    unavailable = UnavailableOfferings()
    with structlog.testing.capture_logs() as logs:
        env.start(env.handler(unavailable))
        for _, message, _ in FOREIGN_AND_MALFORMED:
            env.send(message)
        await eventually(
            lambda: (
                # at least: a message whose visibility timeout ran out on a loaded machine is
                # received and deleted again (SQS delivers at least once)
                sample("karpenter_interruption_deleted_messages_total")
                >= deleted + len(FOREIGN_AND_MALFORMED)
            ),
            within=90,
            what="every message deleted",
        )
        await env.drained()
        await env.stop_all()
    expected_malformed = sum(1 for *_, bad in FOREIGN_AND_MALFORMED if bad)
    assert sample("karpy_interruption_malformed_messages_total") == malformed + expected_malformed
    assert claim_of(kubectl, "spot-a")["metadata"]["resourceVersion"] == version
    assert len(unavailable) == 0
    assert env.disrupted == []
    unreadable = [e for e in logs if e["event"].startswith("unreadable interruption message")]
    assert len(unreadable) == expected_malformed
    assert all(e["queue"] == QUEUE and e["cause"] for e in unreadable)
    assert all(len(e["body"]) <= 256 for e in unreadable)


async def test_a_missing_queue_is_reported_and_retried_until_it_exists(
    env: Env, kubectl: Kubectl
) -> None:
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    labels = {"operation": "GetQueueUrl", "code": "AWS.SimpleQueueService.NonExistentQueue"}
    errors = sample("karpy_interruption_queue_errors_total", labels)
    with structlog.testing.capture_logs() as logs:
        env.start(env.handler(UnavailableOfferings()), queue="late-queue")
        await eventually(
            lambda: sample("karpy_interruption_queue_errors_total", labels) >= errors + 3,
            what="three failed attempts",
        )
        reported = [e for e in logs if e["event"].startswith("interruption queue unavailable")]
        assert reported and reported[0]["queue"] == "late-queue"
        assert reported[0]["log_level"] == "error"
        assert "does not exist" in reported[0]["cause"].lower()
        url = sqs(env.endpoint).create_queue(QueueName="late-queue")["QueueUrl"]
        sqs(env.endpoint).send_message(QueueUrl=url, MessageBody=body(spot_interruption("i-0aaa")))
        await eventually(lambda: deleting(kubectl, "spot-a"), what="spot-a deleting")
        assert any(e["event"] == "watching interruption queue" for e in logs)


class FailsOnce:
    """A seam fault: the first call of an async function raises, as a crash or an outage would."""

    def __init__(self, call: Callable[[Message], Awaitable[int]]) -> None:
        self.call = call
        self.calls = 0

    async def __call__(self, message: Message) -> int:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("injected: the apiserver went away")
        return await self.call(message)


async def test_a_message_whose_handling_failed_is_delivered_again_and_then_handled(
    env: Env, kubectl: Kubectl
) -> None:
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    handler = env.handler(UnavailableOfferings())
    failing = FailsOnce(handler.handle)
    handler.handle = failing  # type: ignore[method-assign]
    env.start(handler, visibility_timeout=2)
    env.send(spot_interruption("i-0aaa"))
    await eventually(lambda: failing.calls >= 1, what="the first attempt")
    assert not deleting(kubectl, "spot-a")
    assert queue_depth(env.endpoint, env.url) == (0, 1)  # still there, invisible
    await eventually(lambda: deleting(kubectl, "spot-a"), what="the redelivered message handled")
    await env.drained()
    assert failing.calls == 2
    assert env.disrupted == [("spot-a", "spot_interrupted")]


class Slow:
    """A seam delay: every handling takes `seconds` longer (a loaded machine)."""

    def __init__(self, call: Callable[[Message], Awaitable[int]], seconds: float) -> None:
        self.call = call
        self.seconds = seconds
        self.calls = 0

    async def __call__(self, message: Message) -> int:
        self.calls += 1
        await asyncio.sleep(self.seconds)
        return await self.call(message)


class VisibilityCalls:
    """botocore hooks: counts ChangeMessageVisibility calls, or refuses them (AccessDenied)."""

    def __init__(self, *, deny: bool = False) -> None:
        self.deny = deny
        self.calls = 0

    def hook(self, service: str, client: Any) -> None:
        if service != "sqs":
            return

        def before(**_: Any) -> None:
            self.calls += 1
            if self.deny:
                error = {"Error": {"Code": "AccessDenied", "Message": "injected: not allowed"}}
                raise ClientError(error, "ChangeMessageVisibility")

        client.meta.events.register("before-call.sqs.ChangeMessageVisibility", before)


@pytest.mark.parametrize("deny", [False, True], ids=["extended", "permission-refused"])
async def test_a_message_handled_longer_than_its_visibility_timeout(
    env: Env, kubectl: Kubectl, deny: bool
) -> None:
    """Handled for 5 s with a 2 s timeout: its visibility is extended meanwhile, so it is
    handled once; without the permission it is delivered again (harmless: one deletion) and
    one log line says why."""
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    handler = env.handler(UnavailableOfferings())
    slow = Slow(handler.handle, 5.0)
    handler.handle = slow  # type: ignore[method-assign]
    visibility = VisibilityCalls(deny=deny)
    with structlog.testing.capture_logs() as logs:
        env.start(
            handler,
            clients=AWSClients(REGION, endpoint_url=env.endpoint, on_client=visibility.hook),
            visibility_timeout=2,
        )
        env.send(spot_interruption("i-0aaa"))
        await eventually(lambda: env.disrupted, within=60, what="the NodeClaim disrupted")
        await env.drained(within=60)
        await asyncio.sleep(2.5)  # a redelivery would have come by now
    assert visibility.calls >= 1
    refused = [e for e in logs if "cannot extend the visibility" in e["event"]]
    if deny:
        assert slow.calls >= 2 and len(refused) == 1
    else:
        assert slow.calls == 1 and not refused
    assert env.disrupted == [("spot-a", "spot_interrupted")]


def fail_first_delete(service: str, client: Any) -> None:
    """botocore hook: the first DeleteMessage is never sent (as if karpy died before it)."""
    state = {"failed": False}

    def before(**_: Any) -> None:
        if not state["failed"]:
            state["failed"] = True
            raise ConnectionError("injected: process killed before DeleteMessage")

    if service == "sqs":
        client.meta.events.register("before-call.sqs.DeleteMessage", before)


async def test_a_crash_between_the_deletion_and_the_message_delete_replays_harmlessly(
    env: Env, kubectl: Kubectl
) -> None:
    """The first replica deletes the NodeClaim and dies before deleting the message; the next
    one (a fresh ICE cache) gets the message again: the offering is marked again, the NodeClaim
    is not deleted twice, and the message is then deleted."""
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    first_cache = UnavailableOfferings()
    env.start(
        env.handler(first_cache),
        clients=AWSClients(REGION, endpoint_url=env.endpoint, on_client=fail_first_delete),
        visibility_timeout=2,
    )
    env.send(spot_interruption("i-0aaa"))
    await eventually(lambda: deleting(kubectl, "spot-a"), what="spot-a deleting")
    await env.stop_all()  # the first replica is gone; its message was not deleted
    assert queue_depth(env.endpoint, env.url) != (0, 0)
    assert env.disrupted == [("spot-a", "spot_interrupted")]
    informer = env.cache.informer(NODECLAIMS)
    await eventually(
        lambda: ((informer.get("spot-a") or {}).get("metadata") or {}).get("deletionTimestamp"),
        what="the cache to see the deletion",
    )

    restarted = UnavailableOfferings()
    env.start(env.handler(restarted))
    await env.drained(within=30)
    assert restarted.is_unavailable("spot", TYPE, ZONE)
    assert env.disrupted == [("spot-a", "spot_interrupted")]  # no second deletion
    assert disruption_reason(kubectl, "spot-a") == "spot_interrupted"


class ReceiveConcurrency:
    """botocore hooks counting ReceiveMessage calls in flight at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    def hook(self, service: str, client: Any) -> None:
        if service != "sqs":
            return

        def before(**_: Any) -> None:
            self.now += 1
            self.most = max(self.most, self.now)

        def after(**_: Any) -> None:
            self.now -= 1

        client.meta.events.register("before-call.sqs.ReceiveMessage", before)
        client.meta.events.register("after-call.sqs.ReceiveMessage", after)


async def test_a_deep_queue_is_read_with_several_receives_in_flight(env: Env) -> None:
    deleted = sample("karpenter_interruption_deleted_messages_total")
    entries = [
        {"Id": str(i), "MessageBody": body(rebalance_recommendation(f"i-{i:04x}"))}
        for i in range(10)
    ]
    for _ in range(12):
        sqs(env.endpoint).send_message_batch(QueueUrl=env.url, Entries=entries)
    receives = ReceiveConcurrency()
    env.start(
        env.handler(UnavailableOfferings()),
        clients=AWSClients(REGION, endpoint_url=env.endpoint, on_client=receives.hook),
    )
    await env.drained(within=60)
    await eventually(
        lambda: sample("karpenter_interruption_deleted_messages_total") >= deleted + 120,
        within=90,
        what="120 messages deleted",
    )
    assert receives.most >= 2


async def test_one_message_handled_twice_at_once_deletes_once(env: Env, kubectl: Kubectl) -> None:
    """SQS may deliver a message again while the first delivery is still being handled (its
    visibility timeout ran out): both read the same cached NodeClaim, only one deletes it."""
    launched(kubectl, "spot-a", "i-0aaa")
    await seen(env, "spot-a", "i-0aaa")
    handler = env.handler(UnavailableOfferings())
    message = parse_message(body(spot_interruption("i-0aaa")))
    deleted = await asyncio.gather(*(handler.handle(message) for _ in range(3)))
    assert sorted(deleted) == [0, 0, 1]
    assert env.disrupted == [("spot-a", "spot_interrupted")]
    assert deleting(kubectl, "spot-a")
