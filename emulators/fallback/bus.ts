// In-process stand-in for the Pub/Sub bus, used by the local stack only when gcloud is missing.
// One process means one "instance" in practice, but every subscription still gets every message,
// in publish order; a handler that throws gets the message again after a short pause. A work
// queue (ensureQueue) keeps its messages while nobody pulls it.
import { randomUUID } from 'node:crypto';
import type { Bus, BusHandler } from '../../lib/adapters/bus';

const REDELIVERY_DELAY_MS = 200;

interface Queue {
  /** null: a work queue nobody pulls right now; its messages wait. */
  handler: BusHandler | null;
  tail: Promise<void>;
  closed: boolean;
}

export function createMemoryBus(): Bus {
  const topics = new Map<string, Set<Queue>>();
  const named = new Map<string, Queue>();
  const topic = (name: string) => {
    if (!topics.has(name)) topics.set(name, new Set());
    return topics.get(name)!;
  };

  const deliver = async (queue: Queue, message: Parameters<BusHandler>[0]) => {
    while (!queue.closed) {
      try {
        if (!queue.handler) throw new Error('no puller');
        await queue.handler(structuredClone(message));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, REDELIVERY_DELAY_MS));
      }
    }
  };

  return {
    async ensureTopic(name) {
      topic(name);
    },
    async deleteTopic(name) {
      for (const q of topics.get(name) ?? []) q.closed = true;
      topics.delete(name);
    },
    async listTopics(prefix) {
      return [...topics.keys()].filter((t) => t.startsWith(prefix));
    },
    async publish(name, data, attributes = {}, opts = {}) {
      if (opts.ifTopicExists && !topics.has(name)) return null;
      const message = {
        id: randomUUID(),
        data: JSON.parse(JSON.stringify(data ?? null)),
        attributes: { ...attributes },
        orderingKey: opts.orderingKey,
      };
      for (const queue of topic(name)) queue.tail = queue.tail.then(() => deliver(queue, message));
      return message.id;
    },
    async subscribeInstance(name, _instanceId, handler) {
      const queue: Queue = { handler, tail: Promise.resolve(), closed: false };
      topic(name).add(queue);
      return {
        async close() {
          queue.closed = true;
          topic(name).delete(queue);
        },
      };
    },
    async ensureQueue(topicName, name) {
      if (named.has(name)) return;
      const queue: Queue = { handler: null, tail: Promise.resolve(), closed: false };
      named.set(name, queue);
      topic(topicName).add(queue);
    },
    async subscribeQueue(topicName, name, handler) {
      await this.ensureQueue(topicName, name);
      const queue = named.get(name)!;
      queue.handler = handler;
      return {
        async close() {
          if (queue.handler === handler) queue.handler = null;
        },
      };
    },
    async close() {
      named.clear();
      for (const queues of topics.values()) for (const q of queues) q.closed = true;
      topics.clear();
    },
  };
}
