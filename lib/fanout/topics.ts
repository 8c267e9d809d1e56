// The fan-out's transport (lib/fanout, docs/architecture.md "How an event reaches a tab"): each
// live instance reads a Pub/Sub topic of its own, `<PUBSUB_TOPIC_EVENTS>.<instance id>`, and a
// message for it is published there. The instance makes its topic and subscription when it joins
// and deletes both when it leaves (liveness.ts orders this against its liveness and cleans up the
// topics of instances that died). Its subscription heals: when the stream closes (the emulator
// restarted, the sweep took the topic while the instance looked dead) the bus recreates the topic
// and the subscription and pulls again (lib/adapters/bus.ts, `ownsTopic`).
import { resourceId, type Bus, type BusHandler } from '../adapters/bus';

/** The topic of one instance's own messages: `<topic>.<instance id>`, a valid topic id. */
export function instanceTopic(topic: string, instanceId: string): string {
  return resourceId(`${topic}.${instanceId}`);
}

/** The instance topics of `topic` that exist now (the live ones and those dead instances left). */
export async function instanceTopics(bus: Pick<Bus, 'listTopics'>, topic: string): Promise<string[]> {
  const prefix = instanceTopic(topic, '');
  return (await bus.listTopics(prefix)).filter((t) => t !== prefix);
}

/**
 * Publishes one message to the topic of each of `instances`, in the user's order (the ordering
 * key). A topic already gone (its instance stopped; its clients reconnect elsewhere and replay)
 * is skipped, never created.
 */
export async function publishToInstances(
  bus: Pick<Bus, 'publish'>,
  topic: string,
  instances: Iterable<string>,
  message: { data: unknown; attributes: Record<string, string>; orderingKey: string },
): Promise<void> {
  const opts = { orderingKey: message.orderingKey, ifTopicExists: true };
  await Promise.all(
    [...instances].map((i) => bus.publish(instanceTopic(topic, i), message.data, message.attributes, opts)),
  );
}

/** Makes the instance's topic and its subscription, which heals (a topic lost is made again). */
export function subscribeOwnTopic(
  bus: Pick<Bus, 'subscribeInstance'>,
  topic: string,
  instanceId: string,
  handler: BusHandler,
): Promise<{ close(): Promise<void> }> {
  // In the cloud too the instance makes (and on leaving deletes) its own topic.
  return bus.subscribeInstance(instanceTopic(topic, instanceId), instanceId, handler, { ownsTopic: true });
}

/** Deletes the instance's topic with its subscriptions; a topic already gone is fine. */
export function deleteInstanceTopic(bus: Pick<Bus, 'deleteTopic'>, topic: string, instanceId: string): Promise<void> {
  return bus.deleteTopic(instanceTopic(topic, instanceId));
}
