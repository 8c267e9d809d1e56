import { randomUUID } from 'node:crypto';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { emulatorFromEnvOrStart, startPubsubEmulator, type RunningEmulator } from '../../emulators/gcloud';
import { emulatorAuth } from './google-auth';
import { createBus, instanceSubscriptionName, type Bus, type BusMessage } from './bus';

const projectId = `bus-${randomUUID().slice(0, 8)}`;
let emulator: RunningEmulator;
let admin: PubSub;
const buses: Bus[] = [];

function newBus(host = emulator.host): Bus {
  const bus = createBus({ projectId, emulatorHost: host });
  buses.push(bus);
  return bus;
}

async function subscriptionsOf(topic: string): Promise<string[]> {
  const [names] = await admin.topic(topic).getSubscriptions();
  return names.map((s) => s.name.split('/').pop()!);
}

beforeAll(async () => {
  emulator = await emulatorFromEnvOrStart('pubsub');
  admin = new PubSub({ projectId, apiEndpoint: emulator.host, emulatorMode: true, authClient: emulatorAuth() });
});

afterAll(async () => {
  await Promise.allSettled(buses.map((b) => b.close()));
  await admin?.close();
  await emulator?.stop();
});

describe('bus', () => {
  it('should deliver one publish to every instance with data and attributes intact', async () => {
    const topic = `events-${randomUUID()}`;
    const [a, b, publisher] = [newBus(), newBus(), newBus()];
    await publisher.ensureTopic(topic);
    const gotA: BusMessage[] = [];
    const gotB: BusMessage[] = [];
    await a.subscribeInstance(topic, 'instance-a', (m) => void gotA.push(m));
    await b.subscribeInstance(topic, 'instance-b', (m) => void gotB.push(m));

    const id = await publisher.publish(topic, { type: 'meeting.updated', n: 1 }, { user_id: 'u1', client_id: 'c-9' });

    await vi.waitFor(() => expect(gotA.length + gotB.length).toBe(2), { timeout: 10_000 });
    for (const got of [gotA, gotB]) {
      expect(got).toEqual([
        {
          id,
          data: { type: 'meeting.updated', n: 1 },
          attributes: { user_id: 'u1', client_id: 'c-9' },
          orderingKey: undefined,
        },
      ]);
    }
  });

  it('should create an expiring, ordered subscription per instance and delete it on close', async () => {
    const topic = `events-${randomUUID()}`;
    const bus = newBus();
    await bus.ensureTopic(topic);
    const sub = await bus.subscribeInstance(topic, 'inst/1', () => {});
    const name = instanceSubscriptionName(topic, 'inst/1');
    expect(await subscriptionsOf(topic)).toEqual([name]);
    const [meta] = await admin.subscription(name).getMetadata();
    expect(meta.enableMessageOrdering).toBe(true);
    expect(Number(meta.expirationPolicy?.ttl?.seconds)).toBe(86_400);

    await sub.close();
    expect(await subscriptionsOf(topic)).toEqual([]);
  });

  it('should keep the publish order of one ordering key, even with a slow async handler', async () => {
    const topic = `events-${randomUUID()}`;
    const [sub, publisher] = [newBus(), newBus()];
    await publisher.ensureTopic(topic);
    const got: number[] = [];
    await sub.subscribeInstance(topic, 'ordered', async (m) => {
      const n = (m.data as { n: number }).n;
      await new Promise((r) => setTimeout(r, n % 3 === 0 ? 20 : 0));
      got.push(n);
    });
    const sent = Array.from({ length: 30 }, (_, n) => n);
    await Promise.all(sent.map((n) => publisher.publish(topic, { n }, {}, { orderingKey: 'user-1' })));
    await vi.waitFor(() => expect(got).toHaveLength(30), { timeout: 15_000 });
    expect(got).toEqual(sent);
  });

  it('should redeliver a message whose handler threw, then stop once it succeeds', async () => {
    const topic = `events-${randomUUID()}`;
    const bus = newBus();
    await bus.ensureTopic(topic);
    let calls = 0;
    await bus.subscribeInstance(topic, 'flaky', () => {
      calls++;
      if (calls === 1) throw new Error('transient');
    });
    await bus.publish(topic, { hello: 'world' });
    await vi.waitFor(() => expect(calls).toBe(2), { timeout: 20_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(calls).toBe(2);
  });
});

describe('bus across a Pub/Sub emulator restart', () => {
  let own: RunningEmulator;
  beforeAll(async () => {
    own = await startPubsubEmulator({});
  });
  afterAll(async () => {
    await own?.stop();
  });

  it('should give up a publish within seconds while Pub/Sub is down, then publish on the same ordering key once it is back', async () => {
    const topic = `events-${randomUUID()}`;
    const bus = createBus({ projectId, emulatorHost: own.host });
    onTestFinished(() => bus.close());
    await bus.ensureTopic(topic);
    await own.stop();
    // The client's default retries a publish for 10 minutes, holding the key's later messages: the
    // test's own timeout (90 s) fails that; how fast it gives up is not this test's to bound.
    const during = await bus.publish(topic, 'during', {}, { orderingKey: 'user-1' }).then(
      () => 'published',
      (err: Error) => err,
    );
    await own.restart!();
    expect(during).toBeInstanceOf(Error);
    await vi.waitFor(() => bus.publish(topic, 'after', {}, { orderingKey: 'user-1' }), {
      timeout: 30_000,
      interval: 500,
    });
  }, 120_000);

  it('should recreate its topic and subscription and deliver again after the emulator forgot them', async () => {
    const topic = `events-${randomUUID()}`;
    const [sub, publisher] = [
      createBus({ projectId, emulatorHost: own.host }),
      createBus({ projectId, emulatorHost: own.host }),
    ];
    onTestFinished(() => Promise.all([sub.close(), publisher.close()]).then(() => {}));
    await publisher.ensureTopic(topic);
    const got: unknown[] = [];
    await sub.subscribeInstance(topic, 'survivor', (m) => void got.push(m.data));
    await publisher.publish(topic, 'before');
    await vi.waitFor(() => expect(got).toEqual(['before']), { timeout: 10_000 });

    await own.restart!();

    // Until the subscriber has recreated its subscription, messages have nowhere to go: keep publishing.
    await vi.waitFor(
      async () => {
        await publisher.publish(topic, 'after');
        expect(got).toContain('after');
      },
      { timeout: 60_000, interval: 500 },
    );
  }, 120_000);
});
