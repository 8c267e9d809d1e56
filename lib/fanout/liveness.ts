// A live instance's liveness and presence, and the clean-up of what a dead one leaves
// (docs/decisions/0009-fanout-liveness.md). Each instance has ONE Firestore document
// (`live_instances`), owned here: its expiry (its liveness: its leases', its presence's and its
// topic's), renewed by the heartbeat's transaction (lib/adapters/coordination.ts, which reads it
// for its leases through aliveUntil), and the connections it holds (presence: the routing table).
// A live instance owns a Pub/Sub topic while it runs (topics.ts). One that dies without stopping
// leaves it behind, and a topic never expires (Pub/Sub allows 10,000 per project), so the sweep
// deletes the topics of instances whose document lapsed (LIVE_INSTANCE_TTL_SECONDS). A running
// instance whose document lapsed (Firestore out of its reach) and whose topic the sweep took
// marks itself again at its next beat; its subscription heals, recreating the topic, and the
// catch-up brings from the outbox what the bus dropped meanwhile.
import {
  FieldPath,
  FieldValue,
  Timestamp,
  type CollectionReference,
  type DocumentData,
  type Transaction,
} from '@google-cloud/firestore';
import { settleWithin } from '../async';
import type { Bus, BusHandler } from '../adapters/bus';
import type { Logger } from '../telemetry/log';
import { deleteInstanceTopic, instanceTopic, instanceTopics, subscribeOwnTopic } from './topics';

/** Presence and liveness by instance, as the live service, the publishers and the sweep use them. */
export interface InstanceRegistry {
  /** At once (routing must find it promptly): the connection joins its instance's document. */
  addPresence(userId: string, connectionId: string, instanceId: string): Promise<void>;
  /** Returns how many connections of the user remain on live instances. */
  removePresence(userId: string, connectionId: string, instanceId: string): Promise<number>;
  countPresence(userId: string): Promise<number>;
  /** The live instances holding a connection of the user: where the user's events must go. One query. */
  presenceInstances(userId: string): Promise<string[]>;
  /** A clean shutdown's end: the instance's document goes. */
  unmarkInstance(instanceId: string): Promise<void>;
  /** The instances whose document has not lapsed. */
  markedInstances(): Promise<string[]>;
}

/** The instance documents, with the two reads the heartbeat's and the leases' transactions make. */
export interface InstanceDocuments extends InstanceRegistry {
  /** Until when each instance is alive (epoch ms; 0: not), read in `tx` when given. */
  aliveUntil(tx: Transaction | null, instanceIds: string[]): Promise<Map<string, number>>;
  /**
   * The heartbeat's read of the instance's own document, in its transaction (before any write);
   * returns the write that keeps it alive until `until`.
   */
  readForBeat(tx: Transaction, instanceId: string): Promise<(until: number) => void>;
  /** Documents written (presence and unmarks; the beat's write is counted by its transaction). */
  readonly writes: number;
}

/** The users an instance's connections belong to (connection id → user id). */
const usersOf = (connections: Record<string, string>) => [...new Set(Object.values(connections))];

export function instanceDocuments(instances: CollectionReference, docId: (id: string) => string): InstanceDocuments {
  let writes = 0;
  const doc = (instanceId: string) => instances.doc(docId(instanceId));
  const aliveOf = (data: DocumentData | undefined) => (data?.expires_at as Timestamp | undefined)?.toMillis() ?? 0;

  /** The live instance documents holding a connection of the user: one query. */
  const holding = async (userId: string) => {
    const snap = await instances
      .where('users', 'array-contains', userId)
      .where('expires_at', '>', Timestamp.now())
      .select('instance_id', 'connections')
      .get();
    return snap.docs
      .map((d) => ({
        instanceId: d.get('instance_id') as string,
        count: Object.values((d.get('connections') ?? {}) as Record<string, string>).filter((u) => u === userId).length,
      }))
      .filter((h) => h.count > 0);
  };
  const countAlive = async (userId: string) => (await holding(userId)).reduce((n, h) => n + h.count, 0);

  return {
    get writes() {
      return writes;
    },
    async aliveUntil(tx, instanceIds) {
      const refs = instanceIds.map(doc);
      const snaps = !refs.length ? [] : tx ? await tx.getAll(...refs) : await Promise.all(refs.map((r) => r.get()));
      return new Map(instanceIds.map((id, i) => [id, aliveOf(snaps[i].data())]));
    },
    async readForBeat(tx, instanceId) {
      const self = doc(instanceId);
      const [mine] = await tx.getAll(self);
      const users = usersOf((mine.get('connections') ?? {}) as Record<string, string>);
      return (until) => {
        // Renewed with every beat, and again after a lapse (Firestore out of reach): then it owns a topic again.
        // guard: live-instance-mark-renewed | remove: tx.set(self, { instance_id: instanceId, expires_at: Timestamp.fromMillis(until), users }, { merge: true }); | test: test/live/sweep-order.test.ts :: mark itself again
        tx.set(self, { instance_id: instanceId, expires_at: Timestamp.fromMillis(until), users }, { merge: true });
      };
    },
    async addPresence(userId, connectionId, instanceId) {
      writes++;
      await doc(instanceId).set(
        { instance_id: instanceId, users: FieldValue.arrayUnion(userId), connections: { [connectionId]: userId } },
        { merge: true },
      );
    },
    async removePresence(userId, connectionId, instanceId) {
      // The user stays in `users` until the next heartbeat tidies it; readers count `connections`.
      writes++;
      await doc(instanceId)
        .update(new FieldPath('connections', connectionId), FieldValue.delete())
        .catch((err: { code?: number }) => {
          if (err.code !== 5) throw err; // NOT_FOUND: the instance's document is gone already
        });
      return countAlive(userId);
    },
    countPresence: countAlive,
    async presenceInstances(userId) {
      return (await holding(userId)).map((h) => h.instanceId);
    },
    async unmarkInstance(instanceId) {
      writes++;
      await doc(instanceId).delete();
    },
    async markedInstances() {
      const snap = await instances.where('expires_at', '>', Timestamp.now()).select('instance_id').get();
      return snap.docs.map((d) => d.get('instance_id') as string);
    },
  };
}

/** What joining and leaving the fan-out, and the clean-up, use of a runtime. */
interface FanoutParts {
  config: { PUBSUB_TOPIC_EVENTS: string };
  bus: Bus;
}

/**
 * Joins the fan-out: the instance is marked (its first heartbeat, `beat`), then its topic and
 * subscription are made. Marked first: the sweep lists topics before it reads marks, so it never
 * finds this topic without its mark.
 */
export async function openInstanceTopic(
  rt: FanoutParts,
  instanceId: string,
  beat: () => Promise<void>,
  handler: BusHandler,
): Promise<{ close(): Promise<void> }> {
  // guard: live-marks-before-its-topic | remove: await | test: test/live/sweep-order.test.ts :: before its mark
  await beat();
  return subscribeOwnTopic(rt.bus, rt.config.PUBSUB_TOPIC_EVENTS, instanceId, handler);
}

/** Leaves the fan-out (a clean shutdown): subscription, topic, then the mark; bounded, best effort. */
export async function closeInstanceTopic(
  rt: FanoutParts,
  registry: Pick<InstanceRegistry, 'unmarkInstance'>,
  instanceId: string,
  subscription: { close(): Promise<void> } | null,
): Promise<void> {
  await settleWithin(subscription?.close() ?? Promise.resolve(), 2_000);
  await settleWithin(deleteInstanceTopic(rt.bus, rt.config.PUBSUB_TOPIC_EVENTS, instanceId), 1_000);
  await settleWithin(registry.unmarkInstance(instanceId), 1_000);
}

/** The two reads the cleanup of dead instances' topics decides on (the sweep's come from the bus and Firestore). */
export interface InstanceTopicReads {
  /** The instance topics that exist now. */
  topics(): Promise<string[]>;
  /** The instances whose mark has not lapsed. */
  marked(): Promise<string[]>;
}

/** The reads from the bus (the events topic's instance topics) and from Firestore (the marks). */
export function instanceTopicReads(
  rt: FanoutParts,
  registry: Pick<InstanceRegistry, 'markedInstances'>,
): InstanceTopicReads {
  return {
    topics: () => instanceTopics(rt.bus, rt.config.PUBSUB_TOPIC_EVENTS),
    marked: () => registry.markedInstances(),
  };
}

/**
 * A live instance that dies without shutting down leaves its topic and subscription behind (a
 * topic never expires). Its tabs reconnect elsewhere and replay from the outbox, so what was
 * addressed to it is not needed; a publish to the deleted topic is skipped (topics.ts).
 */
export async function deleteDeadInstanceTopics(
  rt: FanoutParts & { log: Logger },
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
