// The console's account export in real headless Chromium against the local stack: request it,
// see it pending or running (the button disabled), then ready with a download link once the
// stack's sweep built it, and the link serves a ZIP whose manifest lists the account's files.
// Then the no-microphone path (an audio file uploaded to an upload meeting, played back, its
// batch transcript shown once the stack's fake ML wrote it) and the search box's width at 1,400 px.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLocalStack, type LocalStack } from '../../emulators/stack';
import { speechLikeWav } from './wav';

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

  it('should upload an audio file to an upload meeting, play it back and show its batch transcript', async () => {
    await page.fill('#new-meeting-title', 'Uploaded call');
    await page.selectOption('#new-meeting-type', 'upload');
    await page.click('#create-meeting');
    await poll(() => page.textContent('#meeting-title')).toBe('Uploaded call');
    const meetingId = (await page.getAttribute('.meeting', 'data-id'))!;
    const wav = speechLikeWav(2);
    // No file chosen: the pane says so and sends nothing.
    await page.click('#audio-upload');
    expect(await page.textContent('#audio-info')).toBe('Choose an audio file first.');
    await page.setInputFiles('#audio-file', { name: 'call.wav', mimeType: 'audio/wav', buffer: wav });
    await page.click('#audio-upload');
    // Stored (the answer's byte count), then loaded through its signed link: the player knows its length.
    await poll(() => page.textContent('#audio-info')).toMatch(/^2\.0 s · link valid until /);
    expect(await page.evaluate(() => (document.querySelector('#audio') as HTMLAudioElement).duration)).toBeCloseTo(
      2,
      1,
    );
    const token = await page.evaluate(() => localStorage.getItem('mi-console-token'));
    const link = await fetch(`${stack.url}/meetings/${meetingId}/audio-url`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const stored = await fetch(((await link.json()) as { url: string }).url);
    expect(Buffer.from(await stored.arrayBuffer()).equals(wav)).toBe(true);
    // The upload was offered to the batch pass: its transcript appears (2 s: one segment).
    await poll(() => page.textContent('#transcription-status')).toBe('transcription completed');
    await poll(() => page.locator('.segment:not(.interim) .text').allTextContents()).toEqual([
      'Good morning everyone, let us get started.',
    ]);
    expect(failedRequests).toEqual([]);
  });

  it('should give the search query a usable width at 1,400 px', async () => {
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.goto(`${stack.url}/console`);
    if (!(await page.evaluate(() => localStorage.getItem('mi-console-token')))) {
      await page.fill('#mint-name', 'e2e-searcher');
      await page.click('#mint');
    }
    await page.waitForSelector('#search-q');
    const box = (await page.locator('#search-q').boundingBox())!;
    // The sidebar is 280 px: the query takes its whole line (it was about 40 px beside the sort and the button).
    expect(box.width).toBeGreaterThanOrEqual(220);
    const button = (await page.locator('#search-form button[type=submit]').boundingBox())!;
    expect(button.width).toBeGreaterThan(0);
  });
});
