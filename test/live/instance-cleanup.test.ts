// A live instance that dies without shutting down (SIGKILL of the Cloud Run entry's process)
// leaves its Pub/Sub topic and subscription behind, and events go on being addressed to it until
// its presence lapses. A tab it held reconnects to another instance and misses none of them (the
// hello's replay); the sweep deletes the dead instance's topic and subscription once its mark in
// Firestore lapsed, keeps those of the running instances, and later publishes to the deleted
// topic are skipped, not retried forever. Against the Pub/Sub and Firestore emulators.
import { randomUUID } from 'node:crypto';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { instanceSubscriptionName } from '@mi/lib/adapters/bus';
import { instanceTopic } from '@mi/lib/fanout/topics';
import { emulatorAuth } from '@mi/lib/adapters/google-auth';
import { recordingLeaseKey } from '@mi/lib/repositories/recordings';
import { runSweep } from '../../functions/sweep';
import { TestClient, createMeeting, range, token, useInstances, type Instance, type Message } from './helpers';

const TTL_SECONDS = 10;
// Ids of this run only: another copy of this file (the guard runner runs two) must not remove
// these instances' marks when its own instances with the same ids shut down.
const run = randomUUID().slice(0, 8);
// A server process's instance document (its liveness, leases and presence) lapses 10 s after its last beat.
const live = useInstances(
  ['a', 'b'].map((n) => ({ instanceId: `cleanup-${n}-${run}` })),
  { LIVE_INSTANCE_TTL_SECONDS: String(TTL_SECONDS) },
);
let a: Instance;
let b: Instance;
let pubsub: PubSub;

beforeAll(() => {
  [a, b] = live.instances;
  pubsub = new PubSub({
    projectId: a.config.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: live.env.PUBSUB_EMULATOR_HOST,
    emulatorMode: true,
    authClient: emulatorAuth(),
  });
});

afterAll(async () => {
  await pubsub?.close();
});

const lastPart = (name: string) => name.split('/').pop()!;
const topicNames = async () => (await pubsub.getTopics())[0].map((t) => lastPart(t.name));
const subscriptionNames = async () => (await pubsub.getSubscriptions())[0].map((s) => lastPart(s.name));
const seqsOf = (client: TestClient) =>
  client.messages.filter((m: Message) => typeof m.seq === 'number').map((m) => m.seq as number);

describe('a live instance that died', () => {
  const afterDeath = 'should lose no event of a tab that moves away; the sweep deletes its topic and subscription';
  it(`${afterDeath} and should keep the topics of running instances`, async () => {
    const events = a.config.PUBSUB_TOPIC_EVENTS;
    const dead = await live.startServer();
    const deadId = dead.instances[0].instance;
    const u = await token(a.config, 'cleanup-u');
    const recorder = await TestClient.connect(a.wsUrl, u);
    const meetingId = await createMeeting(a, u);
    const tab = await TestClient.connect(dead.wsUrl, u);
    await recorder.start(meetingId);
    for (const seq of range(0, 29)) recorder.frame(seq);
    await tab.acked(meetingId, 29); // A's events reach the tab over the dead-to-be instance's topic
    const lastSeq = Math.max(...seqsOf(tab));

    dead.process.kill('SIGKILL');
    await dead.exited;
    for (const seq of range(30, 59)) recorder.frame(seq); // still addressed to the dead instance
    await recorder.acked(meetingId, 59);
    expect(await topicNames()).toContain(instanceTopic(events, deadId));

    const moved = await TestClient.connect(b.wsUrl, u, { lastSeq });
    for (const seq of range(60, 89)) recorder.frame(seq);
    await moved.acked(meetingId, 89);

    // The topics the sweep deletes, as it asks the bus: a running instance recreates a lost topic
    // at once (its subscription's heal), so the listing afterwards would not show it was deleted.
    const deleted: string[] = [];
    const bus = { ...a.rt.bus, deleteTopic: (t: string) => (deleted.push(t), a.rt.bus.deleteTopic(t)) };
    await vi.waitFor(
      async () => {
        await runSweep({ ...a.rt, bus }, { coordination: a.rt.coordination });
        expect(await topicNames()).not.toContain(instanceTopic(events, deadId));
      },
      { timeout: 60_000, interval: 500 },
    );
    expect(new Set(deleted)).toEqual(new Set([instanceTopic(events, deadId)]));
    const [topics, subscriptions] = await Promise.all([topicNames(), subscriptionNames()]);
    expect(subscriptions).not.toContain(instanceSubscriptionName(instanceTopic(events, deadId), deadId));
    for (const running of [a, b]) {
      const own = instanceTopic(events, running.live.instanceId);
      expect(topics).toContain(own);
      expect(subscriptions).toContain(instanceSubscriptionName(own, running.live.instanceId));
    }

    // A may still address the dead instance (its presence has not lapsed): that publish is skipped.
    for (const seq of range(90, 119)) recorder.frame(seq);
    await moved.acked(meetingId, 119);
    const seqs = seqsOf(moved);
    expect(seqs).toEqual(range(lastSeq + 1, seqs.at(-1)!));
    const me = await fetch(`${a.url}/me`, { headers: { authorization: `Bearer ${u}` } });
    const userId = ((await me.json()) as { id: string }).id;
    await vi.waitFor(async () => {
      const { rows } = await a.rt.db.query<{ n: number }>(
        'test.unpublished',
        'SELECT count(*)::int AS n FROM event_outbox WHERE user_id = $1 AND published_at IS NULL',
        [userId],
      );
      expect(rows[0].n).toBe(0);
    });
    await recorder.stop(meetingId);
    recorder.close();
    moved.close();
  });

  it('should recreate the lost topic and subscription of a running instance and address it again', async () => {
    const own = instanceTopic(a.config.PUBSUB_TOPIC_EVENTS, b.live.instanceId);
    await b.rt.bus.deleteTopic(own); // as the sweep would, had b's mark lapsed
    await vi.waitFor(
      async () => {
        expect(await topicNames()).toContain(own);
        expect(await subscriptionNames()).toContain(instanceSubscriptionName(own, b.live.instanceId));
      },
      { timeout: 30_000, interval: 250 },
    );
    const v = await token(a.config, 'cleanup-v');
    const tab = await TestClient.connect(b.wsUrl, v);
    const before = b.live.fanout.busMessages;
    const meetingId = await createMeeting(a, v); // addressed to b over its recreated topic
    await tab.waitFor({ type: 'EntityChanged', id: meetingId });
    await vi.waitFor(() => expect(b.live.fanout.busMessages).toBeGreaterThan(before));
    tab.close();
  });
});

describe("a killed live instance's takes", () => {
  it('should be free for another instance within LIVE_INSTANCE_TTL_SECONDS of its last beat', async () => {
    const dead = await live.startServer();
    const deadId = dead.instances[0].instance;
    const u = await token(a.config, `cleanup-take-${randomUUID()}`);
    const meetingId = await createMeeting(a, u);
    const client = await TestClient.connect(dead.wsUrl, u);
    const key = recordingLeaseKey(meetingId, (await client.start(meetingId)).audio_version);
    await vi.waitFor(async () => expect(await a.rt.coordination.get(key)).toMatchObject({ owner: deadId, epoch: 1 }));
    expect(await a.rt.coordination.acquire(key, 'taker', 30_000)).toBeNull();

    const killedAt = Date.now();
    dead.process.kill('SIGKILL');
    await dead.exited;
    // The bound, from what Firestore holds: nothing renews the lease after the kill, and it ends
    // at most one TTL after the last beat (the dead instance's document), so within one TTL of the kill.
    const held = await a.rt.coordination.get(key);
    expect(held?.expiresAt.getTime() ?? 0).toBeLessThanOrEqual(killedAt + TTL_SECONDS * 1000);
    await vi.waitFor(
      async () => expect(await a.rt.coordination.acquire(key, 'taker', 30_000)).toMatchObject({ epoch: 2 }),
      { timeout: 60_000, interval: 250 },
    );
    client.close();
  });
});
