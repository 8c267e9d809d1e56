// GET /docs: Scalar's API reference, served from our own origin with telemetry and every other
// third-party call off (issue #17: the former swagger-ui-dist pulled a telemetry package).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api?.close());

describe('docs page', () => {
  it('should load only same-origin resources and turn telemetry, hosted fonts and the agent off', async () => {
    const res = await api.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.text).toContain('<script src="/docs/assets/api-reference.js"></script>');
    // No CDN, no third-party origin anywhere in the page.
    expect(res.text).not.toMatch(/(https?:)?\/\/[a-z0-9-]+\.[a-z]/i);
    const config = JSON.parse(/createApiReference\('#app', (\{.*\})\);/.exec(res.text)?.[1] ?? 'null');
    expect(config).toMatchObject({
      url: '/openapi.json',
      telemetry: false,
      withDefaultFonts: false,
      agent: { disabled: true },
      hideClientButton: true,
      showDeveloperTools: 'never',
    });
  });

  it('should serve the reference bundle locally, which still knows the options the page turns off', async () => {
    const res = await api.request('GET', '/docs/assets/api-reference.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/javascript');
    expect(res.text.length).toBeGreaterThan(100_000);
    expect(res.text).toContain('createApiReference');
    // An upgrade that renamed these options would silently turn telemetry or the fonts back on.
    expect(res.text).toContain('Enables / disables telemetry');
    expect(res.text).toContain('withDefaultFonts');
    expect(res.text).toMatch(/agent:\w+\(\w+\(\{key:\w+\(\w+\(\)\),disabled:/);
  });

  it('should serve nothing else under /docs/assets', async () => {
    for (const path of [
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/standalone.js',
      '/docs/assets/..%2F..%2Fpackage.json',
    ])
      expect((await api.request('GET', path)).status, path).toBe(404);
  });
});
