import { Hono } from 'hono';
import { jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { registerConsole, type ConsoleConfig } from './routes';

const SECRET = 'console-test-identity-secret-0123456789';

function appFor(env: ConsoleConfig['APP_ENV']) {
  const app = new Hono();
  registerConsole(app, { APP_ENV: env, IDENTITY_SECRET_KEY: SECRET, RECORDING_MAX_CHUNK_BYTES: 1_048_576, ML_TASK_CADENCE_SEGMENTS: 12 });
  return app;
}

const mint = (app: Hono, body: string) => app.request('/console/dev-token', { method: 'POST', headers: { 'content-type': 'application/json' }, body });

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
      ['/console/recorder-worklet.js', 'text/javascript', "registerProcessor(\"pcm-frames\""],
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
    const { token } = (await res.json()) as { token: string };
    const { payload } = await jwtVerify(token, new TextEncoder().encode(SECRET), { algorithms: ['HS256'] });
    expect(payload).toMatchObject({ sub: 'dev|alice', username: 'alice' });
  });

  it('should reject a bad name (422) and malformed JSON (400) as problems', async () => {
    const app = appFor('development');
    const bad = await mint(app, JSON.stringify({ name: 'a b' }));
    expect(bad.status).toBe(422);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect((await mint(app, '{')).status).toBe(400);
  });

  it.each(['test', 'staging', 'production'] as const)('should not offer minting with APP_ENV=%s', async (env) => {
    const app = appFor(env);
    expect((await mint(app, JSON.stringify({ name: 'alice' }))).status).toBe(404);
    expect(await (await app.request('/console')).text()).toContain('"devMint":false');
  });
});
