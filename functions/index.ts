// The Cloud Functions (gen2) source: two HTTP targets served by the functions framework.
//   api    the REST API (the same Hono app the local stack serves)
//   sweep  the periodic sweep, called by Cloud Scheduler
// The runtime (config, database pool, clients) is built once per instance, on first use.
import * as ff from '@google-cloud/functions-framework';
import { getRequestListener } from '@hono/node-server';
import { loadConfig } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import { createRuntime, type Runtime } from '@mi/lib/adapters/runtime';
import { createApp } from './api/app';
import { sweepHandler } from './sweep';

// Parsed at load: a bad configuration fails the instance's start-up, naming the variable.
const config = loadConfig();
let runtime: Promise<Runtime> | null = null;

function getRuntime(): Promise<Runtime> {
  runtime ??= (async () => {
    const database = await openDatabase(config);
    return createRuntime(config, database.db, { name: 'api' });
  })();
  return runtime;
}

const api = getRuntime().then((rt) => getRequestListener(createApp(rt).fetch));
const sweep = getRuntime().then((rt) => sweepHandler(rt, { coordination: rt.coordination }));
// Start-up failures surface on the first request's error log, not as an unhandled rejection.
api.catch(() => {});
sweep.catch(() => {});

ff.http('api', async (req, res) => (await api)(req, res));
ff.http('sweep', async (req, res) => (await sweep)(req, res));
