import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateWebhook } from './create';
import { registerWebhookDeliveries } from './deliveries';
import { registerDeleteWebhook } from './delete';
import { registerGetWebhook } from './get';
import { registerListWebhooks } from './list';
import { registerRotateWebhookSecret } from './rotate-secret';
import { registerTestWebhook } from './test';
import { registerUpdateWebhook } from './update';

export function registerWebhooks(app: OpenAPIHono<AppEnv>) {
  registerListWebhooks(app);
  registerCreateWebhook(app);
  registerGetWebhook(app);
  registerUpdateWebhook(app);
  registerDeleteWebhook(app);
  registerWebhookDeliveries(app);
  registerTestWebhook(app);
  registerRotateWebhookSecret(app);
}
