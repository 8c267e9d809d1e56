// Event payloads delivered over the WebSocket, documented as OpenAPI components from the one
// event catalogue (lib/event-catalogue.ts), so client teams have one reference for REST and events.
import { z, type OpenAPIHono } from '@hono/zod-openapi';
import { EventBodySchemas } from '@mi/lib/event-catalogue';

type OpenAPIRegistry = OpenAPIHono['openAPIRegistry'];

const envelope = {
  event_id: z.string().uuid(),
  seq: z.number().int().describe('grows with every event of the user; send as last_seq in hello to replay'),
  occurred_at: z.string().datetime(),
};

export function eventComponents(registry: OpenAPIRegistry) {
  for (const [name, body] of Object.entries(EventBodySchemas)) registry.register(name, body.extend(envelope));
}
