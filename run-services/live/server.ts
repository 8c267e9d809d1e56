// Cloud Run entry of the live service. With LIVE_WORKERS > 1 (default: one per CPU) this process
// is the primary and forks that many workers sharing $PORT (primary.ts); otherwise it is the one
// live instance itself (instance.ts). SIGTERM drains every instance within Cloud Run's 10 s.
import cluster from 'node:cluster';
import { loadConfig } from '@mi/lib/config';
import { createLogger } from '@mi/lib/telemetry/log';
import { runInstance } from './instance';
import { runPrimary } from './primary';

// Cloud Run names the port PORT; it plays the part of CORE_PORT here.
const config = loadConfig({ ...process.env, ...(process.env.PORT ? { CORE_PORT: process.env.PORT } : {}) });
const log = createLogger({ level: config.LOG_LEVEL, name: 'live', project: config.GOOGLE_CLOUD_PROJECT });

if (cluster.isPrimary && config.LIVE_WORKERS > 1) runPrimary(config.LIVE_WORKERS, log);
else await runInstance(config, log);
