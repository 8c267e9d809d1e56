// The baseline of `npm run bench:api`: a bare Hono app answering /healthz, served by the same
// functions framework, Node and pinning as the api bundle. What any function pays per request.
import * as ff from '@google-cloud/functions-framework';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.get('/healthz', (c) => c.json({ status: 'ok' }));
ff.http('api', getRequestListener(app.fetch));
