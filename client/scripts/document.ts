// The REST app's OpenAPI document, built in process: no server, database or emulator. The routes
// register at construction and GET /openapi.json reads only the config, so the other adapters
// are never touched. A fixed config keeps the output the same on every machine.
import { loadConfig } from '@mi/lib/config';
import { createLogger } from '@mi/lib/telemetry/log';
import type { AppDeps } from '../../functions/api/env';
import { createApp } from '../../functions/api/app';

export async function buildDocument(): Promise<Record<string, any>> {
  const config = loadConfig({
    APP_ENV: 'test',
    LOG_LEVEL: 'error',
    IDENTITY_SECRET_KEY: 'openapi-document-only-0123456789abcdef',
    SERVICE_AUTH_TOKEN: 'openapi-document-only-service-0123456789',
    PUBLIC_BASE_URL: 'http://localhost:4002',
  });
  const deps = { config, log: createLogger({ level: 'error', name: 'openapi' }) } as AppDeps;
  const res = await createApp(deps).request('/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, any>;
}
