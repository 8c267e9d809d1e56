// GET /docs in a real browser: the API reference renders the app's own OpenAPI document and the
// page requests nothing from any other origin (no CDN, no telemetry, no hosted fonts).
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let api: ApiHarness;
let browser: Browser;

beforeAll(async () => {
  api = await startApi();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
});

describe('docs page in a browser', () => {
  it('should render the API reference from /openapi.json and contact no other origin', async () => {
    const page = await browser.newPage();
    const origin = new URL(api.url).origin;
    const foreign: string[] = [];
    // Every request to another origin is recorded and refused, so none can succeed unseen.
    await page.route('**/*', (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      foreign.push(route.request().url());
      return route.abort();
    });
    const ownRequests: string[] = [];
    page.on('request', (r) => new URL(r.url()).origin === origin && ownRequests.push(new URL(r.url()).pathname));
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${api.url}/docs`);
    // The document's title and an operation of its first group: the reference rendered the document.
    const doc = (await api.request('GET', '/openapi.json')).body;
    await page.getByText(doc.paths['/me'].get.summary).first().waitFor({ timeout: 30_000 });
    // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node
    await expect.poll(() => page.locator('body').innerText(), { timeout: 10_000 }).toContain(doc.info.title);
    await page.waitForTimeout(1000); // anything fired after the first render
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    expect(ownRequests).toEqual(expect.arrayContaining(['/docs', '/docs/assets/api-reference.js', '/openapi.json']));
    await page.close();
  }, 60_000);
});
