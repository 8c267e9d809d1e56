// Serves the developer console of the local stack: the page at /console, its bundled script,
// stylesheet and AudioWorklet, and (APP_ENV=development only) POST /console/dev-token, which
// mints a development user token the way `npm run token` does.
import type { Context, Hono } from 'hono';
import { mintDevToken } from '@mi/lib/adapters/auth';
import type { Config } from '@mi/lib/config';
import { DomainError } from '@mi/lib/errors';
import { PROBLEM_CONTENT_TYPE, toProblem } from '@mi/lib/errors/problem';
import { consoleAssets } from './bundle';
import { renderPage } from './page';

const NAME = /^[\w.-]{1,64}$/;
// A loopback name with any port: what a browser on this machine sends. Any other Host is a page
// reached through DNS rebinding (its name resolves to 127.0.0.1, its Host stays its own).
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;

/** Why a mint request is refused (decisions.md section 7, Identities), or null. */
function foreignRequest(c: Context): string | null {
  const host = c.req.header('host') ?? '';
  if (!LOOPBACK_HOST.test(host)) return 'the development token is minted only for localhost, 127.0.0.1 or [::1]';
  const origin = c.req.header('origin');
  // Same origin: the page's own scheme and Host. A cross-origin form or script sends its own.
  if (origin !== undefined && origin.toLowerCase() !== `http://${host}`.toLowerCase())
    return 'the development token is minted only for this origin';
  const type = (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
  // text/plain is what a cross-origin page may send without a preflight.
  if (type !== 'application/json') return 'the development token takes only application/json';
  return null;
}

function problem(err: DomainError): Response {
  const { problem, headers } = toProblem(err);
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, ...headers },
  });
}

function asset(c: Context, body: string, type: string): Response {
  // Bundled per process: a restarted stack serves fresh code, so no caching.
  return c.body(body, 200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
}

export type ConsoleConfig = Pick<
  Config,
  'APP_ENV' | 'IDENTITY_SECRET_KEY' | 'RECORDING_MAX_CHUNK_BYTES' | 'ML_TASK_CADENCE_SEGMENTS'
>;

// Any Hono app: the API's OpenAPIHono or a plain one.
export function registerConsole(app: Hono<any, any, any>, config: ConsoleConfig): void {
  const devMint = config.APP_ENV === 'development' && !!config.IDENTITY_SECRET_KEY;
  const html = renderPage({
    devMint,
    appEnv: config.APP_ENV,
    maxChunkBytes: config.RECORDING_MAX_CHUNK_BYTES,
    taskCadenceSegments: config.ML_TASK_CADENCE_SEGMENTS,
  });

  app.get('/console', (c) => c.html(html, 200, { 'Cache-Control': 'no-store' }));
  app.get('/console/', (c) => c.redirect('/console'));
  app.get('/console/app.js', async (c) => asset(c, (await consoleAssets()).app, 'text/javascript; charset=utf-8'));
  app.get('/console/app.css', async (c) => asset(c, (await consoleAssets()).css, 'text/css; charset=utf-8'));
  app.get('/console/recorder-worklet.js', async (c) =>
    asset(c, (await consoleAssets()).worklet, 'text/javascript; charset=utf-8'),
  );

  // Outside development the route does not exist: the app answers 404 as for any unknown path.
  if (!devMint) return;
  app.post('/console/dev-token', async (c) => {
    const refused = foreignRequest(c);
    if (refused) return problem(new DomainError('forbidden', refused));
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return problem(new DomainError('bad_request', 'body must be JSON: {"name": "alice"}'));
    }
    const name = (body as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || !NAME.test(name)) {
      return problem(
        new DomainError('unprocessable', 'name: 1-64 letters, digits, . _ -', [
          { path: 'name', message: 'must match [A-Za-z0-9_.-]{1,64}' },
        ]),
      );
    }
    return c.json({ token: await mintDevToken(config.IDENTITY_SECRET_KEY!, name) }, 200, {
      'Cache-Control': 'no-store',
    });
  });
}
