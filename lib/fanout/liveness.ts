// An instance's place in the fan-out, and its liveness (docs/decisions/0009-fanout-liveness.md).
// A live instance owns a Pub/Sub topic while it runs: it creates it (with its subscription) when
// it starts and deletes it when it stops. One that dies without stopping leaves it behind, and a
// topic never expires (Pub/Sub allows 10,000 per project), so the sweep deletes the topics of
// instances whose Firestore document (their mark: lib/adapters/coordination.ts, the one liveness
// of an instance, its leases and presence, renewed by its heartbeat, LIVE_INSTANCE_TTL_SECONDS)
// lapsed. A running instance whose document lapsed (Firestore out of its reach) and whose topic
// the sweep took marks itself again at its next beat; its subscription heals, recreating the
// topic (bus.ts), and the catch-up brings from the outbox what the bus dropped meanwhile.
import { settleWithin } from '../async';
import { instanceTopic, type BusHandler } from '../adapters/bus';
import type { Coordination } from '../adapters/coordination';
import type { Runtime } from '../adapters/runtime';

/**
 * Joins the fan-out: the instance is marked (its first heartbeat, `beat`), then its topic and
 * subscription are made. Marked first: the sweep lists topics before it reads marks, so it never
 * finds this topic without its mark.
 */
export async function openInstanceTopic(
  rt: Pick<Runtime, 'config' | 'bus'>,
  instanceId: string,
  beat: () => Promise<void>,
  handler: BusHandler,
): Promise<{ close(): Promise<void> }> {
  // guard: live-marks-before-its-topic | remove: await | test: test/live/sweep-order.test.ts :: before its mark
  await beat();
  // In the cloud too the instance makes (and on leaving deletes) its own topic.
  const own = instanceTopic(rt.config.PUBSUB_TOPIC_EVENTS, instanceId);
  return rt.bus.subscribeInstance(own, instanceId, handler, { ownsTopic: true });
}

/** Leaves the fan-out (a clean shutdown): subscription, topic, then the mark; bounded, best effort. */
export async function closeInstanceTopic(
  rt: Pick<Runtime, 'config' | 'bus'>,
  coordination: Pick<Coordination, 'unmarkInstance'>,
  instanceId: string,
  subscription: { close(): Promise<void> } | null,
): Promise<void> {
  await settleWithin(subscription?.close() ?? Promise.resolve(), 2_000);
  await settleWithin(rt.bus.deleteTopic(instanceTopic(rt.config.PUBSUB_TOPIC_EVENTS, instanceId)), 1_000);
  await settleWithin(coordination.unmarkInstance(instanceId), 1_000);
}

/** The two reads the cleanup of dead instances' topics decides on (the sweep's come from the bus and Firestore). */
export interface InstanceTopicReads {
  /** The instance topics that exist now (bus.instanceTopics). */
  topics(): Promise<string[]>;
  /** The instances whose mark has not lapsed (coordination.markedInstances). */
  marked(): Promise<string[]>;
}

/** The reads from the bus (the events topic's instance topics) and from Firestore (the marks). */
export function instanceTopicReads(
  rt: Pick<Runtime, 'config' | 'bus'>,
  marks: Pick<Coordination, 'markedInstances'>,
): InstanceTopicReads {
  return {
    topics: () => rt.bus.instanceTopics(rt.config.PUBSUB_TOPIC_EVENTS),
    marked: () => marks.markedInstances(),
  };
}

/**
 * A live instance that dies without shutting down leaves its topic and subscription behind (a
 * topic never expires). Its tabs reconnect elsewhere and replay from the outbox, so what was
 * addressed to it is not needed; a publish to the deleted topic is skipped (bus.ts).
 */
export async function deleteDeadInstanceTopics(
  rt: Pick<Runtime, 'config' | 'bus' | 'log'>,
  reads: InstanceTopicReads,
): Promise<number> {
  const topic = rt.config.PUBSUB_TOPIC_EVENTS;
  // Topics first, marks after, never both at once: an instance marks itself before it creates its
  // topic, so every topic listed here of a running instance has its mark in the read that follows.
  // Marks read first (or alongside) could miss an instance that starts between the two reads and
  // delete the topic it just made (test/live/sweep-order.test.ts).
  const listing = reads.topics();
  // guard: sweep-lists-topics-before-marks | remove: await listing; | test: test/live/sweep-order.test.ts :: starts between
  await listing;
  const [topics, markedIds] = await Promise.all([listing, reads.marked()]);
  const marked = new Set(markedIds.map((id) => instanceTopic(topic, id)));
  // guard: sweep-keeps-marked-instance-topics | remove: .filter((t) => !marked.has(t)) | test: test/live/instance-cleanup.test.ts :: keep the topics of running instances
  const dead = topics.filter((t) => !marked.has(t));
  let deleted = 0;
  for (const t of dead) {
    // One topic Pub/Sub will not delete now (a timeout, an error) is left to the next pass; the
    // others are still deleted.
    try {
      await rt.bus.deleteTopic(t);
    } catch (err) {
      rt.log.warn(
        { topic: t, err: String(err) },
        "sweep: a gone instance's topic was not deleted; the next pass retries",
      );
      continue;
    }
    deleted++;
    rt.log.info({ topic: t }, 'sweep: deleted the topic and subscription of a live instance that is gone');
  }
  return deleted;
}
