// The sweep deletes the topic of every live instance it finds unmarked. A live instance marks
// itself (its first heartbeat) before it creates its topic, and the sweep lists the topics before it reads the marks:
// then no instance that starts while the sweep runs loses its topic, whatever the interleaving.
// The sweep's two reads are held here so that an instance starts (marks itself, creates its
// topic) exactly between them — after the first answered, before the second is asked; when the
// two are asked together, the marks are answered first.
// An instance whose mark lapsed while it ran (Firestore out of reach of its heartbeat) loses its
// topic to the sweep: it marks itself again at its next beat, recreates its topic and subscription, and its tabs lose no event
// meanwhile (what the bus dropped, the catch-up brings from the outbox). Against the Pub/Sub and
// Firestore emulators.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PubSub } from '@google-cloud/pubsub';
import { createBus, instanceSubscriptionName, type Bus } from '@mi/lib/adapters/bus';
import { instanceTopic } from '@mi/lib/fanout/topics';
import { createCoordination, type Coordination } from '@mi/lib/adapters/coordination';
import { emulatorAuth } from '@mi/lib/adapters/google-auth';
import { deleteDeadInstanceTopics, instanceTopicReads, type InstanceTopicReads } from '@mi/lib/fanout/liveness';
import { startTcpProxy } from '../support/tcp-proxy';
import { TestClient, createMeeting, range, startInstance, token, useInstances, type Instance } from './helpers';

const live = useInstances([{ instanceId: `order-a-${randomUUID()}` }]);
let env: Record<string, string>;
let a: Instance;
let pubsub: PubSub;
const started: Instance[] = [];

beforeAll(() => {
  [a] = live.instances;
  env = live.env;
  pubsub = new PubSub({
    projectId: a.config.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: env.PUBSUB_EMULATOR_HOST,
    emulatorMode: true,
    authClient: emulatorAuth(),
  });
});

afterAll(async () => {
  await Promise.allSettled(started.map((i) => i.close()));
  await pubsub?.close();
});

const startLive = async (
  name: string,
  opts: { coordination?: Coordination; bus?: Bus; env?: Record<string, string>; leaseTtlMs?: number } = {},
) => {
  const instanceId = `order-${name}-${randomUUID()}`;
  const { env: own, ...rest } = opts;
  const instance = await startInstance(live.database, { ...env, ...own }, { instanceId, ...rest });
  started.push(instance);
  return instance;
};

/** a's bus, recording what the sweep deletes (still deleting it). */
function recordingBus(deleted: string[]): Bus {
  return {
    ...a.rt.bus,
    deleteTopic: async (t) => {
      deleted.push(t);
      await a.rt.bus.deleteTopic(t);
    },
  };
}

/**
 * One cleanup pass whose reads are held so that `between` runs after the first read answered and
 * before the second is asked (asked together: the marks are answered first, then `between`, then
 * the listing). Returns the topics the pass deleted.
 */
async function sweepAround(between: () => Promise<unknown>): Promise<string[]> {
  const real = instanceTopicReads(a.rt, a.rt.coordination);
  let ran: Promise<unknown> | undefined;
  const runBetween = () => (ran ??= between());
  let marksAsked = false;
  let marksAnswered!: () => void;
  const marksDone = new Promise<void>((resolve) => (marksAnswered = resolve));
  const reads: InstanceTopicReads = {
    async topics() {
      await null; // a marks read asked alongside this one is asked by now
      if (marksAsked) {
        await marksDone;
        await runBetween();
      }
      const listed = await real.topics();
      if (!marksAsked) await runBetween();
      return listed;
    },
    async marked() {
      marksAsked = true;
      const marked = await real.marked();
      marksAnswered();
      return marked;
    },
  };
  const deleted: string[] = [];
  await deleteDeadInstanceTopics({ ...a.rt, bus: recordingBus(deleted) }, reads);
  expect(ran).toBeDefined(); // the instance did start during the pass
  await ran;
  return deleted;
}

/** One cleanup pass with the sweep's own reads; the topics it deleted. */
async function sweep(): Promise<string[]> {
  const deleted: string[] = [];
  await deleteDeadInstanceTopics({ ...a.rt, bus: recordingBus(deleted) }, instanceTopicReads(a.rt, a.rt.coordination));
  return deleted;
}

/** The instance's topic and its subscription are there. */
const subscribed = async (instance: Instance) => {
  const own = instanceTopic(instance.config.PUBSUB_TOPIC_EVENTS, instance.live.instanceId);
  const [subscriptions] = await pubsub.topic(own).getSubscriptions();
  return subscriptions
    .map((s) => s.name.split('/').pop())
    .includes(instanceSubscriptionName(own, instance.live.instanceId));
};

describe('the sweep and a live instance that starts meanwhile', () => {
  it('should keep the topic of an instance that starts between its two reads and delete a dead one', async () => {
    const events = a.config.PUBSUB_TOPIC_EVENTS;
    const dead = instanceTopic(events, `order-dead-${randomUUID()}`); // an instance killed before it unmarked
    await a.rt.bus.ensureTopic(dead);
    let newcomer: Instance | undefined;
    const deleted = await sweepAround(async () => (newcomer = await startLive('between')));
    const own = instanceTopic(events, newcomer!.live.instanceId);
    expect(deleted).toContain(dead);
    expect(deleted).not.toContain(own);
    expect(await subscribed(newcomer!)).toBe(true);
  });

  it('should delete the other dead topics when Pub/Sub refuses to delete one, and count only those', async () => {
    const events = a.config.PUBSUB_TOPIC_EVENTS;
    const dead = instanceTopic(events, `order-dead-${randomUUID()}`);
    await a.rt.bus.ensureTopic(dead);
    // A name Pub/Sub refuses (INVALID_ARGUMENT), listed first: the pass must go on past it.
    const refused = `${instanceTopic(events, 'x')} not a topic`;
    const reads: InstanceTopicReads = { topics: async () => [refused, dead], marked: async () => [] };
    expect(await deleteDeadInstanceTopics(a.rt, reads)).toBe(1);
    expect((await pubsub.topic(dead).exists())[0]).toBe(false);
  });

  it('should keep the topic of an instance that started before its listing', async () => {
    const events = a.config.PUBSUB_TOPIC_EVENTS;
    const early = await startLive('early');
    const own = instanceTopic(events, early.live.instanceId);
    const deleted = await sweepAround(() => startLive('late'));
    const late = started.at(-1)!;
    expect(deleted).not.toContain(own);
    expect(deleted).not.toContain(instanceTopic(events, late.live.instanceId));
    expect(await subscribed(early)).toBe(true);
  });
});

const firestoreCoordination = () =>
  createCoordination({
    projectId: a.config.GOOGLE_CLOUD_PROJECT,
    emulatorHost: a.config.FIRESTORE_EMULATOR_HOST,
    collectionPrefix: 'live_',
  });

describe('a live instance that starts while the sweep runs', () => {
  it('should keep its topic when the sweep passes right before its mark is written', async () => {
    // Its first heartbeat (the mark) waits for a sweep pass. Had start() not waited for the mark
    // before making its topic, the topic would exist, unmarked, when the pass reads.
    const real = firestoreCoordination();
    const bus = createBus({ projectId: a.config.GOOGLE_CLOUD_PROJECT, emulatorHost: env.PUBSUB_EMULATOR_HOST });
    let subscribing: Promise<unknown> | undefined;
    let swept: Promise<string[]> | undefined;
    const coordination: Coordination = {
      ...real,
      async heartbeat(beat) {
        swept ??= (async () => {
          await null; // start() goes on meanwhile unless it awaits its mark…
          await subscribing; // …and then its topic exists before the mark
          return sweep();
        })();
        await swept;
        return real.heartbeat(beat);
      },
    };
    const watched: Bus = { ...bus, subscribeInstance: (...args) => (subscribing = bus.subscribeInstance(...args)) };
    try {
      const c = await startLive('start', { coordination, bus: watched });
      expect(swept).toBeDefined();
      expect(await swept).not.toContain(instanceTopic(a.config.PUBSUB_TOPIC_EVENTS, c.live.instanceId));
      expect(await subscribed(c)).toBe(true);
      await c.close();
    } finally {
      await real.close();
    }
  });
});

describe('a running instance whose mark lapsed', () => {
  it('should mark itself again, recreate the topic the sweep took, and lose no event meanwhile', async () => {
    let unreachable = false; // Firestore out of reach of c's heartbeats (its mark)
    const real = firestoreCoordination();
    const coordination: Coordination = {
      ...real,
      async heartbeat(beat) {
        if (unreachable) throw new Error('14 UNAVAILABLE: Firestore unreachable');
        return real.heartbeat(beat);
      },
    };
    // c reaches Pub/Sub through a proxy the test can hang; its mark lapses 3 s after the last renewal.
    const proxy = await startTcpProxy(`http://${env.PUBSUB_EMULATOR_HOST}`);
    const cEnv = { PUBSUB_EMULATOR_HOST: new URL(proxy.url).host };
    const c = await startLive('lapsed', { coordination, env: cEnv, leaseTtlMs: 3_000 });
    try {
      const id = c.live.instanceId;
      const own = instanceTopic(a.config.PUBSUB_TOPIC_EVENTS, id);
      const u = await token(a.config, `order-u-${randomUUID()}`);
      const tab = await TestClient.connect(c.wsUrl, u);
      const changed = (meetingId: string) => tab.waitFor({ type: 'EntityChanged', id: meetingId });
      const first = (await changed(await createMeeting(a, u))).seq as number; // a addresses c's topic

      unreachable = true;
      const poll = { timeout: 30_000, interval: 250 };
      await vi.waitFor(async () => expect(await a.rt.coordination.markedInstances()).not.toContain(id), poll);
      proxy.hang(); // c cannot recreate what the sweep deletes until it forwards again
      expect(await sweep()).toContain(own);
      // a's publishes to c's topic are skipped (it is gone): the catch-up brings them from the outbox.
      const busEvents = c.live.fanout.busEvents;
      const during = [];
      for (const _ of range(1, 3)) during.push(await createMeeting(a, u));
      for (const meetingId of during) await changed(meetingId);
      expect(c.live.fanout.busEvents).toBe(busEvents);

      proxy.forward();
      unreachable = false;
      await vi.waitFor(async () => {
        expect(await a.rt.coordination.markedInstances()).toContain(id);
        expect(await subscribed(c)).toBe(true);
      }, poll);
      expect(await sweep()).not.toContain(own);
      await changed(await createMeeting(a, u));
      await vi.waitFor(() => expect(c.live.fanout.busEvents).toBeGreaterThan(busEvents)); // over its topic again
      const seqs = tab.messages.filter((m) => typeof m.seq === 'number').map((m) => m.seq as number);
      expect(seqs.filter((seq) => seq >= first)).toEqual(range(first, seqs.at(-1)!));
      tab.close();
    } finally {
      proxy.forward();
      await c.close();
      await Promise.allSettled([real.close(), proxy.close()]);
    }
  });
});
