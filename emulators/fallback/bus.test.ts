import { describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '../../lib/adapters/bus';
import { createMemoryBus } from './bus';
import { instanceTopics } from '../../lib/fanout/topics';

describe('in-process bus', () => {
  it('should give every subscription every message, in order, with attributes', async () => {
    const bus = createMemoryBus();
    const a: BusMessage[] = [];
    const b: unknown[] = [];
    await bus.subscribeInstance('events', 'a', (m) => void a.push(m));
    const subB = await bus.subscribeInstance('events', 'b', (m) => void b.push(m.data));
    const id = await bus.publish('events', { n: 1 }, { user_id: 'u1' }, { orderingKey: 'u1' });
    await bus.publish('events', { n: 2 });
    await vi.waitFor(() => expect(b).toEqual([{ n: 1 }, { n: 2 }]));
    expect(a[0]).toEqual({ id, data: { n: 1 }, attributes: { user_id: 'u1' }, orderingKey: 'u1' });

    await subB.close();
    await bus.publish('events', { n: 3 });
    await vi.waitFor(() => expect(a).toHaveLength(3));
    expect(b).toHaveLength(2);
    await bus.close();
  });

  it('should redeliver a message whose handler threw', async () => {
    const bus = createMemoryBus();
    let calls = 0;
    await bus.subscribeInstance('events', 'a', () => {
      if (++calls === 1) throw new Error('transient');
    });
    await bus.publish('events', 'x');
    await vi.waitFor(() => expect(calls).toBe(2));
    await bus.close();
  });

  it("should list a topic's instance topics until they are deleted", async () => {
    const bus = createMemoryBus();
    for (const t of ['events', 'events.a', 'events.b', 'other.a']) await bus.ensureTopic(t);
    expect((await instanceTopics(bus, 'events')).sort()).toEqual(['events.a', 'events.b']);
    await bus.deleteTopic('events.a');
    expect(await instanceTopics(bus, 'events')).toEqual(['events.b']);
    await bus.close();
  });
});
