// The console's account export in real headless Chromium against the local stack: request it,
// see it pending or running (the button disabled), then ready with a download link once the
// stack's sweep built it, and the link serves a ZIP whose manifest lists the account's files.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLocalStack, type LocalStack } from '../../emulators/stack';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const poll: typeof expect.poll = (read, options) => expect.poll(read, { timeout: 30_000, ...options });

let stack: LocalStack;
let browser: Browser;
let page: Page;
let dir: string;
const failedRequests: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)`);
  dir = mkdtempSync(path.join(tmpdir(), 'mi-e2e-export-'));
  const tag = randomUUID().slice(0, 8);
  stack = await startLocalStack({
    ...inject('emulatorEnv'),
    DATA_DIR: path.join(dir, 'data'),
    CORE_PORT: '0',
    ML_PORT: '0',
    APP_ENV: 'development',
    LOG_LEVEL: 'warn',
    OTEL_ENABLED: 'false',
    STORAGE_BUCKET: `e2e-export-${tag}`,
    PUBSUB_TOPIC_EVENTS: `e2e-export-events-${tag}`,
    PUBSUB_TOPIC_RECORDING_FINALIZED: `e2e-export-finalized-${tag}`,
    // The stack's sweep builds exports: a pass every second.
    RECORDING_GAP_SWEEP_INTERVAL_SECONDS: '1',
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  page = await (await browser.newContext({ viewport: { width: 1440, height: 1000 } })).newPage();
  page.on('response', (r) => {
    if (r.status() >= 400) failedRequests.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('account export in the console', () => {
  it('should request an export, show its progress and offer the archive once ready', async () => {
    await page.goto(`${stack.url}/console`);
    await page.fill('#mint-name', 'e2e-exporter');
    await page.click('#mint');
    await poll(() => page.textContent('#user-name')).toBe('e2e-exporter');
    await page.fill('#new-meeting-title', 'Exported meeting');
    await page.selectOption('#new-meeting-type', 'text');
    await page.click('#create-meeting');
    await poll(() => page.textContent('#meeting-title')).toBe('Exported meeting');
    const meetingId = (await page.getAttribute('.meeting', 'data-id'))!;

    expect(await page.textContent('#account-export-state')).toContain('No export yet.');
    await page.click('#account-export-request');
    // Pending or running (the sweep may already be at it), the button waits for it to finish.
    await poll(() => page.getAttribute('#account-export-state', 'data-status')).toMatch(/pending|running|ready/);
    // Ready (the EntityChanged account_export refreshes the panel), with a download link.
    await poll(() => page.getAttribute('#account-export-state', 'data-status')).toBe('ready');
    expect(await page.isDisabled('#account-export-request')).toBe(false);
    const href = (await page.getAttribute('#account-export-download', 'href'))!;
    const res = await fetch(href);
    expect(res.status).toBe(200);
    const zip = path.join(dir, 'export.zip');
    writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
    const listed = spawnSync('unzip', ['-Z1', zip], { encoding: 'utf8' });
    expect(listed.status).toBe(0);
    expect(listed.stdout.split('\n')).toEqual(
      expect.arrayContaining(['manifest.json', 'account.json', `meetings/${meetingId}/meeting.json`]),
    );
    expect(failedRequests).toEqual([]);
  });
});
