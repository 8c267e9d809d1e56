import { WEBHOOK_EVENT_TYPES } from '@mi/lib/repositories/webhooks';
import { PageQuery, Timestamp, Uuid, z } from '../../openapi';

const EventTypes = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*']))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((types) => !types.includes('*') || types.length === 1, '"*" (every event type) stands alone')
  .refine((types) => new Set(types).size === types.length, 'event types must not repeat')
  .openapi({ description: 'WebSocket event names to send, or ["*"] for all three', example: ['EntityChanged'] });

const Url = z.string().url().max(2048).openapi({
  description: 'https (http://localhost and http://127.0.0.1 in development and test)',
  example: 'https://example.com/hooks/meetings',
});
const Description = z.string().max(500).nullable();

export const WebhookSchema = z
  .object({
    id: Uuid,
    url: z.string(),
    event_types: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Webhook', {
    example: {
      id: '3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b',
      url: 'https://example.com/hooks/meetings',
      event_types: ['EntityChanged'],
      description: 'CRM sync',
      enabled: true,
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

export const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().openapi({
    description: 'the signing secret (whsec_ + base64): shown on creation only; keep it',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  }),
}).openapi('CreatedWebhook');

export const WebhookBody = z
  .object({ url: Url, event_types: EventTypes, description: Description.optional() })
  .strict()
  .openapi('WebhookInput');

export const WebhookPatch = z
  .object({
    url: Url,
    event_types: EventTypes,
    description: Description,
    enabled: z.boolean().openapi({ description: 'true enables a disabled endpoint again' }),
  })
  .partial()
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one field')
  .openapi('WebhookPatch');

export const AttemptSchema = z
  .object({
    event_id: Uuid.openapi({ description: 'the webhook-id header: the event (or WebhookTest) sent' }),
    attempt: z.number().int().openapi({ description: '1 for the first attempt' }),
    status_code: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "the receiver's status; null when it did not answer" }),
    error: z.string().nullable().openapi({ description: 'why there was no answer; null when there was one' }),
    duration_ms: z.number().int(),
    attempted_at: Timestamp,
  })
  .openapi('WebhookAttempt');

export const RotateSecretBody = z
  .object({
    expire_previous: z
      .boolean()
      .optional()
      .openapi({ description: 'true: the previous secret stops signing at once (no overlap); default false' }),
  })
  .strict()
  .openapi('WebhookSecretRotation');

export const RotatedSecretSchema = z
  .object({
    secret: z.string().openapi({
      description: 'the new signing secret (whsec_ + base64): shown here only',
      example: 'whsec_Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy',
    }),
  })
  .openapi('WebhookSecret');

export const TestSentSchema = z.object({ event_id: Uuid }).openapi('WebhookTestQueued');

export const DeliveriesQuery = z.object(PageQuery);
