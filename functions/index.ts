// The Cloud Functions (gen2) source: two HTTP targets served by the functions framework.
//   api    the REST API (the same Hono app the local stack serves)
//   sweep  the periodic sweep, called by Cloud Scheduler
// The runtime (config, database pool, clients) is built once per instance, on first use.
import type { Domain } from 'node:domain';
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

/**
 * Runs a request outside the Node domain the framework opens for it: inside one, every promise
 * and callback of the request enters and leaves the domain (a tenth of a list request's CPU).
 * The app answers its own errors (onError); anything that still escapes reaches the framework's
 * uncaughtException handler, which answers 500 and restarts the instance (Node's advice after
 * an uncaught exception), where the domain would have kept the process serving.
 */
const outsideDomain =
  (listener: Promise<ff.HttpFunction>): ff.HttpFunction =>
  async (req, res) => {
    (process as { domain?: Domain }).domain?.exit();
    return (await listener)(req, res);
  };

ff.http('api', outsideDomain(api));
ff.http('sweep', outsideDomain(sweep));
