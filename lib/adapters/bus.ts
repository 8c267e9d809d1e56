// The bus on Pub/Sub: generic publish and subscribe (what the fan-out does with it is lib/fanout).
// A subscriber names itself (an instance id): it gets its own subscription on a topic, so every
// subscriber of a shared topic receives every message. A subscription whose stream closes heals:
// it is made again (with its topic, when the subscriber owns it) and pulled again. Messages are
// JSON; per-user messages carry an ordering key so one user's arrive in order. Delivery is at
// least once: handlers must be idempotent.
import { KeyedQueue, retry, withTimeout } from '../async';
import {
  Duration,
  PubSub,
  type CreateSubscriptionOptions,
  type Message,
  type Subscription,
  type Topic,
} from '@google-cloud/pubsub';
import { createLogger, type Logger } from '../telemetry/log';
import { emulatorAuth } from './google-auth';

export interface BusMessage {
  id: string;
  data: unknown;
  attributes: Record<string, string>;
  orderingKey?: string;
}

export interface PublishOptions {
  /** Messages with the same key reach every subscriber in publish order. */
  orderingKey?: string;
  /**
   * The topic may be deleted at any time (a live instance's own, lib/fanout/topics.ts): a missing
   * topic is never created (not even against the emulator) and the publish resolves to null.
   */
  ifTopicExists?: boolean;
}

export type BusHandler = (m: BusMessage) => void | Promise<void>;

export interface Bus {
  ensureTopic(topic: string): Promise<void>;
  /** A topic with its subscriptions; a topic already gone is fine. */
  deleteTopic(topic: string): Promise<void>;
  /** The ids of the topics that exist now and start with `prefix`. */
  listTopics(prefix: string): Promise<string[]>;
  /** The message id; null for a topic that no longer exists (`ifTopicExists`). */
  publish(
    topic: string,
    data: unknown,
    attributes?: Record<string, string>,
    opts?: PublishOptions,
  ): Promise<string | null>;
  /**
   * One subscription per instance, expiring when unused, deleted on close(). Handler success acks,
   * a throw nacks. `ownsTopic`: the subscriber's own topic, created with the subscription (and
   * again when it heals: the topic was deleted meanwhile).
   */
  subscribeInstance(
    topic: string,
    instanceId: string,
    handler: BusHandler,
    opts?: { ownsTopic?: boolean },
  ): Promise<{ close(): Promise<void> }>;
  /** Creates a work queue: a named, durable subscription (kept while nobody pulls), unless it exists. */
  ensureQueue(topic: string, subscription: string): Promise<void>;
  /** Pulls a work queue (ensureQueue first): each message goes to one of its pullers; close() keeps the queue. */
  subscribeQueue(topic: string, subscription: string, handler: BusHandler): Promise<{ close(): Promise<void> }>;
  close(): Promise<void>;
}

// Pub/Sub's minimum expiration TTL: a killed instance's subscription disappears a day later.
const SUBSCRIPTION_TTL_SECONDS = 24 * 60 * 60;
// Broadcasts are only useful to a live instance; 10 minutes is Pub/Sub's minimum retention.
const RETENTION_SECONDS = 600;
const INSTANCE_OPTIONS: CreateSubscriptionOptions = {
  enableMessageOrdering: true,
  expirationPolicy: { ttl: { seconds: SUBSCRIPTION_TTL_SECONDS } },
  messageRetentionDuration: { seconds: RETENTION_SECONDS },
  retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 30 } },
};
// A work queue as Terraform declares the ML's (infra/modules/pubsub): never expires, keeps a
// week of messages, and redelivers with backoff.
const QUEUE_OPTIONS: CreateSubscriptionOptions = {
  ackDeadlineSeconds: 600,
  expirationPolicy: {}, // no ttl: never expires
  messageRetentionDuration: { seconds: 7 * 24 * 60 * 60 },
  retryPolicy: { minimumBackoff: { seconds: 10 }, maximumBackoff: { seconds: 600 } },
};
const HEAL_BACKOFF_MS = [250, 500, 1_000, 2_000, 5_000];
const CLOSE_TIMEOUT_MS = 5_000;
const STREAM_RETRY_MAX_SECONDS = 3;
// Publishes retry for 10 s, not the client's default 10 minutes: callers keep what must not be
// lost (the event outbox, republished by the sweep), and a publish retrying for minutes would
// hold every later message of its ordering key behind it.
const PUBLISH_BACKOFF = {
  initialRetryDelayMillis: 100,
  retryDelayMultiplier: 2,
  maxRetryDelayMillis: 2_000,
  initialRpcTimeoutMillis: 5_000,
  rpcTimeoutMultiplier: 1,
  maxRpcTimeoutMillis: 5_000,
  totalTimeoutMillis: 10_000,
};
// gRPC's reconnect backoff grows to 120 s: after an outage of half a minute the channel could sit
// idle for ~20 s more before it even tries, holding publishes and the subscription's recovery.
const MAX_RECONNECT_BACKOFF_MS = 5_000;
const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;

export function createBus(opts: { projectId: string; emulatorHost?: string; log?: Logger }): Bus {
  const emulatorHost = opts.emulatorHost ?? process.env.PUBSUB_EMULATOR_HOST;
  const client = new PubSub({
    projectId: opts.projectId,
    // gax hands `grpc.*` options to the channel; ClientConfig does not declare them.
    ...({ 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS } as object),
    ...(emulatorHost && {
      apiEndpoint: emulatorHost,
      emulatorMode: true,
      authClient: emulatorAuth(),
    }),
  });
  const topics = new Map<string, Topic>();
  const subscriptions = new Set<{ close(): Promise<void> }>();
  const log = opts.log ?? createLogger({ name: 'bus' });
  const warn = (err: unknown, msg: string) => log.warn({ err }, msg);

  const topicFor = (name: string) => {
    let topic = topics.get(name);
    if (!topic) {
      topic = client.topic(name, { messageOrdering: true, gaxOpts: { retry: { backoffSettings: PUBLISH_BACKOFF } } });
      topics.set(name, topic);
    }
    return topic;
  };

  // In production Terraform owns topics; against an emulator (which forgets everything on
  // restart) the bus creates them on demand.
  const ensureTopic = async (name: string) => {
    try {
      await client.createTopic(name);
    } catch (err) {
      if (codeOf(err) !== GRPC_ALREADY_EXISTS) throw err;
    }
  };

  const publishOnce = async (name: string, data: unknown, attributes: Record<string, string>, orderingKey?: string) => {
    const topic = topicFor(name);
    try {
      return await topic.publishMessage({ data: Buffer.from(JSON.stringify(data ?? null)), attributes, orderingKey });
    } catch (err) {
      // A failed publish pauses its ordering key until resumed.
      if (orderingKey) topic.resumePublishing(orderingKey);
      throw err;
    }
  };

  // A topic's deletion leaves its subscriptions behind (detached, holding their messages until
  // they expire a day later): they go first.
  const deleteTopic = async (name: string) => {
    topics.delete(name);
    const topic = client.topic(name);
    try {
      const [subscriptions] = await withTimeout(topic.getSubscriptions(), CLOSE_TIMEOUT_MS);
      await Promise.all(subscriptions.map((s) => withTimeout(s.delete(), CLOSE_TIMEOUT_MS).catch(ignoreNotFound)));
      await withTimeout(topic.delete(), CLOSE_TIMEOUT_MS);
    } catch (err) {
      ignoreNotFound(err);
    }
  };

  const listTopics = async (prefix: string) => {
    const [all] = await client.getTopics();
    return all.map((t) => t.name.split('/').pop()!).filter((t) => t.startsWith(prefix));
  };

  const publish: Bus['publish'] = async (name, data, attributes = {}, publishOpts = {}) => {
    try {
      return await publishOnce(name, data, attributes, publishOpts.orderingKey);
    } catch (err) {
      if (codeOf(err) === GRPC_NOT_FOUND && publishOpts.ifTopicExists) {
        topics.delete(name);
        return null;
      }
      if (!emulatorHost || codeOf(err) !== GRPC_NOT_FOUND) throw err;
      await ensureTopic(name);
      return publishOnce(name, data, attributes, publishOpts.orderingKey);
    }
  };

  const createSubscription = async (
    topicName: string,
    name: string,
    options: CreateSubscriptionOptions,
    ownsTopic = false,
  ) => {
    if (emulatorHost || ownsTopic) await ensureTopic(topicName);
    try {
      await topicFor(topicName).createSubscription(name, options);
    } catch (err) {
      if (codeOf(err) !== GRPC_ALREADY_EXISTS) throw err; // an instance restarting with the same id
    }
  };

  const ensureQueue: Bus['ensureQueue'] = (topicName, name) => createSubscription(topicName, name, QUEUE_OPTIONS);

  const subscribeInstance: Bus['subscribeInstance'] = (topicName, instanceId, handler, o = {}) => {
    const name = instanceSubscriptionName(topicName, instanceId);
    return pull(topicName, name, handler, {
      create: () => createSubscription(topicName, name, INSTANCE_OPTIONS, o.ownsTopic),
      deleteOnClose: true,
    });
  };

  const subscribeQueue: Bus['subscribeQueue'] = (topicName, name, handler) =>
    pull(topicName, name, handler, { create: () => ensureQueue(topicName, name), deleteOnClose: false });

  const pull = async (
    topicName: string,
    name: string,
    handler: BusHandler,
    how: { create(): Promise<void>; deleteOnClose: boolean },
  ) => {
    const create = how.create;
    await create();

    // A short retry ceiling: after an outage, pulling resumes within seconds, not a minute.
    const subscription: Subscription = client.subscription(name, {
      streamingOptions: { retryMaxBackoff: Duration.from({ seconds: STREAM_RETRY_MAX_SECONDS }) },
    });
    const keyChains = new KeyedQueue();
    let closing = false;

    const deliver = async (message: Message) => {
      let data: unknown;
      try {
        data = JSON.parse(message.data.toString('utf8'));
      } catch (err) {
        warn(err, `bus: dropping message ${message.id} on ${topicName}: not JSON`);
        message.ack();
        return;
      }
      try {
        await handler({
          id: message.id,
          data,
          attributes: { ...message.attributes },
          orderingKey: message.orderingKey || undefined,
        });
        message.ack();
      } catch (err) {
        warn(err, `bus: handler failed for message ${message.id} on ${topicName}; it will be redelivered`);
        message.nack();
      }
    };

    // The client emits messages of one key in order; chaining keeps an async handler from overlapping them.
    subscription.on('message', (message: Message) => {
      const key = message.orderingKey;
      if (!key) return void deliver(message);
      void keyChains.run(key, () => deliver(message));
    });
    subscription.on('error', (err) => warn(err, `bus: subscription ${name} error`));
    // The stream closes itself on a non-retryable error (e.g. the subscription vanished when the
    // emulator restarted, or the sweep deleted the topic of an instance whose liveness had lapsed:
    // lib/fanout/liveness.ts): recreate the subscription (and an owned topic) and pull again.
    // guard: instance-subscription-heals | remove: void heal() | test: test/live/sweep-order.test.ts :: mark itself again
    subscription.on('close', () => {
      if (!closing) void heal();
    });
    const heal = () =>
      retry(
        async () => {
          if (closing) return;
          await create();
          if (!closing) subscription.open();
        },
        {
          steps: HEAL_BACKOFF_MS,
          giveUp: () => closing,
          onRetry: (err) => warn(err, `bus: recreating subscription ${name} failed`),
        },
      ).catch(() => undefined); // thrown only once closing

    const handle = {
      async close() {
        if (closing) return;
        closing = true;
        subscriptions.delete(handle);
        // Bounded: shutdown has seconds, and an undeleted subscription expires on its own.
        try {
          await withTimeout(subscription.close(), CLOSE_TIMEOUT_MS);
          if (how.deleteOnClose) await withTimeout(subscription.delete(), CLOSE_TIMEOUT_MS);
        } catch (err) {
          if (codeOf(err) !== GRPC_NOT_FOUND) warn(err, `bus: could not delete subscription ${name}`);
        }
      },
    };
    subscriptions.add(handle);
    return handle;
  };

  return {
    ensureTopic,
    deleteTopic,
    listTopics,
    publish,
    subscribeInstance,
    ensureQueue,
    subscribeQueue,
    async close() {
      await Promise.allSettled([...subscriptions].map((s) => s.close()));
      await Promise.allSettled([...topics.values()].map((t) => withTimeout(t.flush(), CLOSE_TIMEOUT_MS)));
      await withTimeout(client.close(), CLOSE_TIMEOUT_MS).catch((err) => warn(err, 'bus: closing the client'));
    },
  };
}

/** The subscription of one subscriber (subscribeInstance) on a topic. */
export function instanceSubscriptionName(topic: string, instanceId: string): string {
  return resourceId(`${topic}--${instanceId}`);
}

/** Topic and subscription ids allow [A-Za-z0-9-_.~+%], start with a letter and hold at most 255 characters. */
export function resourceId(name: string): string {
  const raw = name.replace(/[^A-Za-z0-9\-_.~+%]/g, '-');
  return (/^[A-Za-z]/.test(raw) ? raw : `s-${raw}`).slice(0, 255);
}

const codeOf = (err: unknown) => (err as { code?: unknown }).code;

const ignoreNotFound = (err: unknown) => {
  if (codeOf(err) !== GRPC_NOT_FOUND) throw err;
};
