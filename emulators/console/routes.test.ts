import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { registerConsole, type ConsoleConfig } from './routes';

const SECRET = 'console-test-identity-secret-0123456789';

function appFor(env: ConsoleConfig['APP_ENV']) {
  const app = new Hono();
  registerConsole(app, {
    APP_ENV: env,
    IDENTITY_SECRET_KEY: SECRET,
    RECORDING_MAX_CHUNK_BYTES: 1_048_576,
    ML_TASK_CADENCE_SEGMENTS: 12,
  });
  return app;
}

/** POST /console/dev-token over real HTTP on loopback, with the headers given (Host included). */
async function mint(app: Hono, body: string, headers: Record<string, string> = {}) {
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const all = { host: `127.0.0.1:${port}`, 'content-type': 'application/json', ...headers };
      const req = request(
        { host: '127.0.0.1', port, path: '/console/dev-token', method: 'POST', headers: all },
        (res) => {
          let text = '';
          res
            .setEncoding('utf8')
            .on('data', (d) => (text += d))
            .on('end', () =>
              resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body: text }),
            );
        },
      );
      req.on('error', reject).end(body);
    });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('console routes', () => {
  it('should serve the page with its settings and the bundled script, stylesheet and worklet', async () => {
    const app = appFor('development');
    const page = await app.request('/console');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console/app.js">');
    expect(html).toContain('"devMint":true');
    expect(html).toContain('"taskCadenceSegments":12');
    for (const [path, type, marker] of [
      ['/console/app.js', 'text/javascript', 'StartRecordingCommand'],
      ['/console/app.css', 'text/css', '.segment'],
      ['/console/recorder-worklet.js', 'text/javascript', 'registerProcessor("pcm-frames"'],
    ]) {
      const res = await app.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toContain(type);
      expect(await res.text()).toContain(marker);
    }
  }, 30_000);

  it('should mint a development user token signed with IDENTITY_SECRET_KEY', async () => {
    const res = await mint(appFor('development'), JSON.stringify({ name: 'alice' }));
    expect(res.status).toBe(200);
    const { token } = JSON.parse(res.body) as { token: string };
    const { payload } = await jwtVerify(token, new TextEncoder().encode(SECRET), { algorithms: ['HS256'] });
    expect(payload).toMatchObject({ sub: 'dev|alice', username: 'alice' });
  });

  it('should reject a bad name (422) and malformed JSON (400) as problems', async () => {
    const app = appFor('development');
    const bad = await mint(app, JSON.stringify({ name: 'a b' }));
    expect(bad.status).toBe(422);
    expect(bad.type).toContain('application/problem+json');
    expect((await mint(app, '{')).status).toBe(400);
  });

  it('should mint for every loopback Host and its own Origin, with a JSON body only', async () => {
    const app = appFor('development');
    const alice = JSON.stringify({ name: 'alice' });
    for (const host of ['localhost:3000', '127.0.0.1', '[::1]:8080', 'LOCALHOST']) {
      expect((await mint(app, alice, { host })).status, host).toBe(200);
      expect((await mint(app, alice, { host, origin: `http://${host}` })).status, host).toBe(200);
    }
    expect((await mint(app, alice, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
  });

  it('should refuse with 403 a foreign Host (DNS rebinding), a foreign Origin and a body that is not JSON', async () => {
    const app = appFor('development');
    const alice = JSON.stringify({ name: 'alice' });
    const refused: Record<string, string>[] = [
      { host: 'attacker.example' },
      { host: 'attacker.example:3000' },
      { host: 'localhost.attacker.example' },
      { host: '127.0.0.1.nip.io' },
      { host: 'localhost:3000', origin: 'http://attacker.example' },
      { host: 'localhost:3000', origin: 'http://localhost:3001' },
      { host: 'localhost:3000', origin: 'null' },
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'multipart/form-data; boundary=x' },
    ];
    for (const headers of refused) {
      const res = await mint(app, alice, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.type).toContain('application/problem+json');
      expect(res.body).not.toContain('token"');
    }
  });

  it.each(['test', 'staging', 'production'] as const)('should not offer minting with APP_ENV=%s', async (env) => {
    const app = appFor(env);
    expect((await mint(app, JSON.stringify({ name: 'alice' }))).status).toBe(404);
    expect(await (await app.request('/console')).text()).toContain('"devMint":false');
  });
});
