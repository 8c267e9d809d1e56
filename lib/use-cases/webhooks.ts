// The caller's webhook endpoints (decisions.md section 7). URLs are checked by the edge before
// the unit of work (lib/webhooks/address.ts: it may resolve DNS, which no transaction should wait
// on); delivery is lib/webhooks/dispatcher.ts.
import { randomBytes, randomUUID } from 'node:crypto';
import * as webhooks from '../repositories/webhooks';
import type { Webhook, WebhookChanges } from '../repositories/webhooks';
import { DomainError, notFound, unprocessable } from '../errors';
import { userOf, type UseCase } from './use-case';

/** Endpoints per user: each event is sent once per endpoint. */
export const MAX_WEBHOOKS_PER_USER = 20;

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export interface CreateWebhookInput {
  url: string;
  event_types: string[];
  description?: string | null;
}

export const createWebhook: UseCase<CreateWebhookInput, Webhook & { secret: string }> = async (ctx, input) => {
  const userId = userOf(ctx);
  if ((await webhooks.countWebhooksLocked(ctx.tx, userId)) >= MAX_WEBHOOKS_PER_USER) {
    throw unprocessable(`at most ${MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first`);
  }
  const secret = newSecret();
  const hook = await webhooks.createWebhook(ctx.tx, userId, {
    url: input.url,
    event_types: input.event_types,
    description: input.description ?? null,
    secret,
  });
  return { ...hook, secret };
};

export const updateWebhook: UseCase<{ id: string; changes: WebhookChanges }, Webhook> = async (
  ctx,
  { id, changes },
) => {
  const hook = await webhooks.updateWebhook(ctx.tx, { userId: userOf(ctx) }, id, changes);
  if (!hook) throw notFound('webhook');
  return hook;
};

export const deleteWebhook: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  if (!(await webhooks.deleteWebhook(ctx.tx, { userId: userOf(ctx) }, id))) throw notFound('webhook');
};

/**
 * A new signing secret, shown once. Deliveries carry both signatures for `overlapSeconds`
 * (WEBHOOK_SECRET_OVERLAP_SECONDS), so a receiver can switch secrets without losing a delivery;
 * `expire_previous` stops signing with the replaced secret at once (e.g. it leaked).
 */
export const rotateWebhookSecret: UseCase<
  { id: string; expire_previous: boolean; overlapSeconds: number },
  { secret: string }
> = async (ctx, { id, expire_previous, overlapSeconds }) => {
  const secret = newSecret();
  const overlap = expire_previous ? 0 : overlapSeconds;
  if (!(await webhooks.rotateSecret(ctx.tx, { userId: userOf(ctx) }, id, secret, overlap))) throw notFound('webhook');
  return { secret };
};

/** Queues a WebhookTest event ahead of the endpoint's other deliveries; the dispatcher sends it at once. */
export const testWebhook: UseCase<{ id: string }, { event_id: string }> = async (ctx, { id }) => {
  const hook = await webhooks.getWebhook(ctx.tx, { userId: userOf(ctx) }, id);
  if (!hook) throw notFound('webhook');
  if (!hook.enabled)
    throw new DomainError('invalid_state', 'webhook is disabled; enable it (PATCH enabled: true) first');
  const eventId = randomUUID();
  const body = { type: 'WebhookTest', event_id: eventId, occurred_at: new Date().toISOString(), webhook_id: id };
  await webhooks.queueDelivery(ctx.tx, id, eventId, JSON.stringify(body));
  return { event_id: eventId };
};
