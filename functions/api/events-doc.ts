// Event payloads delivered over the WebSocket, documented as OpenAPI components from the one
// event catalogue (lib/events/catalogue.ts), so client teams have one reference for REST and events.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { deliveredEventSchemas } from '@mi/lib/events/catalogue';

type OpenAPIRegistry = OpenAPIHono['openAPIRegistry'];

export function eventComponents(registry: OpenAPIRegistry) {
  for (const [name, schema] of deliveredEventSchemas()) registry.register(name, schema);
}
