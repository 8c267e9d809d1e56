// The developer console in real headless Chromium against the whole local stack: Chromium's
// fake microphone plays a generated WAV; the page records ~10 s over the WebSocket, live
// transcript segments and insights appear (fake ML), the socket is dropped once mid-way and
// the take resumes without losing a frame, a few frames "lost on the wire" come back as a gap
// upload after the stop, the take is finalized, and the finished audio plays; a speaker label is
// assigned, the person's voice samples shown, and the label unassigned again; naming a new person
// like an existing one (409) offers that person instead; a new label with her voice is suggested
// as her (one click assigns), and a duplicate of her merges into her. The open meeting is in the URL (back,
// forward and reload keep it), the tasks panel says when tasks come, the layout holds at 375 px,
// and the page makes no failed request on the way. Then the finished meeting is searched (both
// sorts), its transcript exported in three formats, a segment's text corrected and its speaker
// changed, an edit that lost to a change made elsewhere shown as such (412), and an older
// transcription of the meeting chosen. Also: the tab's durable figure is the server's, long event
// payloads are folded, talking points are numbered from 1, and a second take is listed beside the
// first, either of which plays. The webhooks page creates an endpoint on a real receiver (its
// secret shown once), sends a test event, lists its deliveries and rotates the secret (the
// receiver verifies with both during the overlap). Screenshots of each state go to
// test-artifacts/e2e/ (UPDATE_SCREENSHOTS=1 also refreshes the committed copies in docs/screenshots/).
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startLocalStack, type LocalStack } from '../../emulators/stack';
import { Receiver } from '../webhooks/receiver';
import { speechLikeWav } from './wav';
import { until } from '../support/poll';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve('test-artifacts/e2e');
const DOC_SHOTS = path.resolve('docs/screenshots');
const RECORD_FRAMES = 100; // 10 s of 100 ms frames
const DROP_AT_FRAMES = 45;
const LOSE_AT_FRAMES = 70;
const LOST_FRAMES = 5;

interface Snapshot {
  phase: string;
  audioVersion: number | null;
  captured: number;
  resumes: number;
  resent: number;
  live: boolean;
  highestContiguous: number;
  unacked: number;
  missingRanges: [number, number][];
  gapUploads: { start: number; end: number; result: string }[];
  error: string | null;
}

let stack: LocalStack;
let browser: Browser;
let page: Page;
let dir: string;
const shots: string[] = [];
const pageLog: string[] = [];
/** Every request of the page that failed: a 4xx/5xx answer or no answer at all. */
const failedRequests: string[] = [];
const pathOf = (url: string) => new URL(url).pathname;
// The page answers over the network on a shared, loaded machine: every poll waits up to 10 s
// (vitest's default is 1 s), still ending as soon as the condition holds.
const poll: typeof expect.poll = (read, options) => expect.poll(read, { timeout: 10_000, ...options });

async function shot(name: string) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
}

const snapshot = () =>
  page.evaluate(() =>
    (window as unknown as { miConsole: { recording(): unknown } }).miConsole.recording(),
  ) as Promise<Snapshot>;

/** Polls `read` until `ok`; a timeout shows the page's log. */
const untilPage = <T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number) =>
  until(what, read, {
    ok: (v) => v !== undefined && ok(v),
    timeoutMs,
    intervalMs: 200,
    context: () => `page log:\n${pageLog.slice(-40).join('\n')}`,
  });

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser test needs Debian's chromium package (apt-get update && apt-get install -y chromium; .ci/run does this when it is missing)`,
    );
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = mkdtempSync(path.join(tmpdir(), 'mi-e2e-'));
  const wav = path.join(dir, 'speech.wav');
  writeFileSync(wav, speechLikeWav(12));
  const tag = randomUUID().slice(0, 8);
  const mlPort = await freePort();
  stack = await startLocalStack({
    ...inject('emulatorEnv'),
    DATA_DIR: path.join(dir, 'data'),
    CORE_PORT: '0',
    // The stack's own fake ML on a known free port (ML_SERVICE_URL would mean an external ML: none would run).
    ML_PORT: String(mlPort),
    APP_ENV: 'development',
    LOG_LEVEL: 'warn',
    OTEL_ENABLED: 'false',
    STORAGE_BUCKET: `e2e-${tag}`,
    PUBSUB_TOPIC_EVENTS: `e2e-events-${tag}`,
    PUBSUB_TOPIC_RECORDING_FINALIZED: `e2e-finalized-${tag}`,
    RECORDING_SEGMENT_TARGET_MS: '500',
    RECORDING_STOP_SETTLE_MS: '200',
    RECORDING_PROGRESS_EVERY_FRAMES: '5',
    RECORDING_PROGRESS_INTERVAL_SECONDS: '1',
    RECORDING_GAP_SWEEP_INTERVAL_SECONDS: '1',
    RECORDING_GAP_UPLOAD_DEADLINE_SECONDS: '5',
    ML_TALKING_POINT_CADENCE_SEGMENTS: '2',
    ML_TASK_CADENCE_SEGMENTS: '3',
  });
  const served = await fetch(`${stack.url}/console`);
  if (served.status !== 200)
    throw new Error(
      `the local stack does not serve /console (${served.status}): emulators/stack.ts must call registerConsole(app, config)`,
    );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  await context.grantPermissions(['microphone'], { origin: stack.url });
  page = await context.newPage();
  page.on('console', (m) => pageLog.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => pageLog.push(`[pageerror] ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400) failedRequests.push(`${r.request().method()} ${pathOf(r.url())} ${r.status()}`);
  });
  page.on('requestfailed', (r) => {
    // A read the test's own reload or navigation cut short (the speaker suggestions load last) is
    // no failure of the page; anything else is.
    if (r.method() === 'GET' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    failedRequests.push(`${r.method()} ${pathOf(r.url())} ${r.failure()?.errorText ?? 'failed'}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (process.env.UPDATE_SCREENSHOTS === '1' && shots.length) {
    mkdirSync(DOC_SHOTS, { recursive: true });
    for (const f of shots) copyFileSync(f, path.join(DOC_SHOTS, path.basename(f)));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('developer console in Chromium', () => {
  it('should record live audio, survive a dropped socket, finalize and play the take', async () => {
    await page.goto(`${stack.url}/console`);
    await page.waitForSelector('#mint');
    await shot('01-sign-in');

    // Sign in with a minted development token; the WebSocket says hello and is ready.
    await page.fill('#mint-name', 'e2e-alice');
    await page.click('#mint');
    await poll(() => page.textContent('#user-name')).toBe('e2e-alice');
    await page.waitForSelector('#conn-state.ready');

    // Create a recording meeting: it opens.
    await page.fill('#new-meeting-title', 'E2E live recording');
    await page.selectOption('#new-meeting-type', 'recording');
    await page.click('#create-meeting');
    await poll(() => page.textContent('#meeting-title')).toBe('E2E live recording');
    const meetingId = (await page.getAttribute('.meeting', 'data-id'))!;
    // Not recording: the tasks panel says nothing of when tasks come.
    expect(await page.locator('#tasks-hint').count()).toBe(0);
    // No upload-style "Load audio" on a recording meeting: its audio loads once a take is final.
    expect(await page.locator('#audio-load').count()).toBe(0);
    await shot('02-meeting-created');

    // The open meeting is in the URL: back closes it, forward and a reload reopen it.
    expect(new URL(page.url()).hash).toBe(`#/meetings/${meetingId}`);
    await page.goBack();
    await poll(() => page.locator('.meeting').count()).toBe(0);
    expect(await page.textContent('#meeting-pane')).toContain('Open or create a meeting.');
    await page.goForward();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    // The open has finished its requests (the audio pane asks last): the reload cuts none.
    await page.waitForFunction(() => document.querySelector('#audio-info')?.textContent?.startsWith('No audio yet'));
    await page.reload();
    await poll(() => page.textContent('#meeting-title')).toBe('E2E live recording');
    expect(await page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    expect(await page.getAttribute('.meeting-item.selected', 'data-id')).toBe(meetingId);
    await page.waitForSelector('#conn-state.ready');

    // Record from the fake microphone; transcript segments arrive while recording.
    await page.click('#record-start');
    await untilPage('recording', snapshot, (s) => s.phase === 'recording' && s.captured > 0, 20_000);
    // No task yet while recording: the panel says when they come (ML_TASK_CADENCE_SEGMENTS=3 here).
    expect(await page.textContent('#tasks-hint')).toContain('after every 3 final transcript segments');
    await untilPage(
      'first transcript segment',
      () => page.locator('.segment:not(.interim)').count(),
      (n) => n >= 1,
      20_000,
    );
    await untilPage(`${DROP_AT_FRAMES} frames`, snapshot, (s) => s.captured >= DROP_AT_FRAMES, 20_000);
    await shot('03-recording');
    // Mid-recording both columns show frames_stored, taken at different moments: each label says
    // where its figure comes from, and each figure when it was taken.
    // In one evaluation: the panel re-renders with every level update, replacing its elements.
    const labelOf = (id: string) =>
      page.evaluate((dd) => document.getElementById(dd)?.previousElementSibling?.textContent, id);
    expect(await labelOf('rec-stored')).toBe('stored (last progress event)');
    await page.waitForSelector('#server-stored .durable');
    expect(await labelOf('server-stored')).toBe('stored (GET /recording)');
    await untilPage(
      'as-of times',
      () => page.locator('#rec-stored .as-of, #server-stored .as-of').allTextContents(),
      (t) => t.length === 2 && t.every((x) => /^ as of \d/.test(x)),
      20_000,
    );

    // Lose the socket once: the page reconnects, resumes the take and resends what is missing.
    await page.evaluate(() => (window as unknown as { miConsole: { dropSocket(): void } }).miConsole.dropSocket());
    const resumed = await untilPage(
      'resume',
      snapshot,
      (s) => s.resumes === 1 && s.phase === 'recording' && s.live,
      30_000,
    );
    expect(resumed.error).toBeNull();
    await page.waitForSelector('#conn-state.ready');
    await shot('04-resumed-after-drop');

    // Five frames never reach the server: the page holds them, and after the stop it uploads
    // the range RecordingStopped reports missing over REST.
    await untilPage(`${LOSE_AT_FRAMES} frames`, snapshot, (s) => s.captured >= LOSE_AT_FRAMES, 30_000);
    await page.evaluate(
      (n) => (window as unknown as { miConsole: { loseFrames(n: number): void } }).miConsole.loseFrames(n),
      LOST_FRAMES,
    );

    await untilPage(`${RECORD_FRAMES} frames`, snapshot, (s) => s.captured >= RECORD_FRAMES, 30_000);
    await page.click('#record-stop');
    const final = await untilPage(
      'finalized',
      snapshot,
      (s) => s.phase === 'finalized' || s.phase === 'failed',
      60_000,
    );
    expect(final.phase).toBe('finalized');
    expect(final.error).toBeNull();
    expect(final.captured).toBeGreaterThanOrEqual(RECORD_FRAMES);
    expect(final.gapUploads).toHaveLength(1);
    expect(final.gapUploads[0]).toMatchObject({ end: final.gapUploads[0].start + LOST_FRAMES - 1, result: '201' });
    expect(final.gapUploads[0].start).toBeGreaterThanOrEqual(LOSE_AT_FRAMES);

    // Nothing was lost across the drop: the server holds every captured frame, contiguously.
    await page.waitForFunction(
      (frames) =>
        document.querySelector('#server-state')?.textContent === 'finalized' &&
        document.querySelector('#server-hcs')?.textContent?.includes(`#${frames - 1})`),
      final.captured,
      { timeout: 20_000 },
    );
    expect(await page.textContent('#server-missing')).toBe('none');
    for (const type of ['connection_closed', 'recording_resumed', 'recording_stopped', 'gap_uploaded', 'finalized']) {
      await page.waitForSelector(`.rec-event[data-type="${type}"]`, { timeout: 10_000 });
    }
    const token = await page.evaluate(() => localStorage.getItem('mi-console-token'));
    const rest = async (p: string) =>
      (await fetch(`${stack.url}${p}`, { headers: { authorization: `Bearer ${token}` } })).json();

    // The tab's durable figure is the server's: frames_stored, in the same words on both sides.
    const stored = (await rest(`/meetings/${meetingId}/recording`)).frames_stored as number;
    expect(stored).toBe(final.captured);
    const figure = `${(stored / 10).toFixed(1)} s (${stored} frames)`;
    expect(await page.textContent('#server-stored .durable')).toBe(figure);
    expect(await page.textContent('#rec-stored .durable')).toBe(figure);

    // Long event payloads are folded to one line; opened, one shows the event's whole payload.
    const events = (await rest(`/meetings/${meetingId}/recording/events?limit=100`)).items as { payload: unknown }[];
    const folds = page.locator('.rec-event .payload-fold');
    expect(await folds.count()).toBe(events.filter((e) => JSON.stringify(e.payload ?? '').length > 60).length);
    expect(await folds.count()).toBeGreaterThan(0);
    const fold = folds.first();
    expect(await fold.getAttribute('open')).toBeNull();
    // Polled: a live event may re-render the list under the locator.
    await expect.poll(async () => (await fold.boundingBox())?.height ?? Infinity).toBeLessThan(30);
    const index = await page
      .locator('.rec-event')
      .evaluateAll((rows) => rows.findIndex((r) => r.querySelector('.payload-fold')));
    await fold.locator('summary').click();
    expect(JSON.parse((await fold.locator('pre').textContent())!)).toEqual(events[index].payload);

    // The finished audio plays, and lasts as long as what was captured.
    await page.waitForFunction(
      () => (document.querySelector('#audio') as HTMLAudioElement).readyState >= 2,
      undefined,
      { timeout: 20_000 },
    );
    const duration = await page.$eval('#audio', (a) => (a as HTMLAudioElement).duration);
    expect(duration).toBeGreaterThan(final.captured / 10 - 0.5);
    expect(duration).toBeLessThan(final.captured / 10 + 0.5);
    await page.$eval('#audio', (a) => (a as HTMLAudioElement).play());
    await page.waitForFunction(
      () => (document.querySelector('#audio') as HTMLAudioElement).currentTime > 0.3,
      undefined,
      { timeout: 10_000 },
    );

    // Live insights arrived: one segment per 2 s window, talking points and a task.
    // (The fake ML posts them as it goes: on a loaded machine the last may come after the finalize.)
    await poll(() => page.locator('.segment:not(.interim)').count(), { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    await page.waitForSelector('#talking-points .talking-point');
    // Talking points are numbered from 1, in the order they came.
    const numbers = await page.locator('#talking-points .tp-number').allTextContents();
    expect(numbers).toEqual(numbers.map((_, i) => `${i + 1}.`));
    await page.waitForSelector('#tasks .task');
    expect(await page.locator('#tasks-hint').count()).toBe(0);
    await shot('05-finalized-playing');

    // Assign SPEAKER_0 to a new person: the transcript shows the name.
    await page.fill('.speaker-new-name[data-label="SPEAKER_0"]', 'Ada');
    await page.click('.speaker-assign[data-label="SPEAKER_0"]');
    await poll(() => page.textContent('.speaker[data-label="SPEAKER_0"] .speaker-current')).toContain('Ada');
    await poll(() => page.locator('.segment .speaker', { hasText: 'Ada' }).count()).toBeGreaterThanOrEqual(1);
    await shot('06-speaker-assigned');

    // Ada's voice samples: the label's segments with an embedding (the fake ML sends one with
    // every live segment), the same the REST list gives.
    await page.click('.speaker-samples[data-label="SPEAKER_0"]');
    await page.waitForSelector('#voice-sample-list .voice-sample');
    const ada = (await rest(`/meetings/${meetingId}/speaker-labels`)).items[0].person_id as string;
    const samples = (await rest(`/people/${ada}/voice-samples?limit=200`)).items as { segment_id: string }[];
    expect(samples.length).toBeGreaterThanOrEqual(1);
    expect(
      await page.locator('.voice-sample').evaluateAll((els) => els.map((e) => e.getAttribute('data-segment'))),
    ).toEqual(samples.map((x) => x.segment_id));
    expect(await page.textContent('#voice-samples h4')).toContain('voice ready');
    await shot('07-voice-samples');

    // Unassign: the transcript loses the name, the samples go and the voice model is untrained.
    await page.click('.speaker-unassign[data-label="SPEAKER_0"]');
    await poll(() => page.textContent('.speaker[data-label="SPEAKER_0"] .speaker-current')).toContain('unassigned');
    await page.waitForSelector('#voice-samples-empty');
    await poll(() => page.locator('.segment .speaker', { hasText: 'Ada' }).count()).toBe(0);
    expect(await page.textContent('#voice-samples h4')).toContain('voice untrained');
    expect(await page.locator('.speaker-unassign[data-label="SPEAKER_0"]').count()).toBe(0);
    await shot('08-speaker-unassigned');
    // Every label is listed, none assigned; nobody has a voice left to suggest.
    for (const item of (await rest(`/meetings/${meetingId}/speaker-labels`)).items)
      expect(item).toMatchObject({ person_id: null, suggestions: [] });
    expect(await rest(`/people/${ada}/voice-samples`)).toEqual({ items: [], next_cursor: null });
    expect(await rest(`/people/${ada}`)).toMatchObject({ voice_model_status: 'untrained', voice_vector: null });

    // A new person named like an existing one: the server answers 409 and the page offers the
    // existing Ada instead of a constraint message; using her assigns the label to her.
    await page.fill('.speaker-new-name[data-label="SPEAKER_0"]', 'Ada');
    await page.click('.speaker-assign[data-label="SPEAKER_0"]');
    await page.waitForSelector('.speaker-use-existing[data-label="SPEAKER_0"]');
    expect(await page.textContent('#speaker-message')).toContain('A person named “Ada” already exists');
    await shot('09-use-existing-person');
    await page.click('.speaker-use-existing[data-label="SPEAKER_0"]');
    await poll(() => page.textContent('.speaker[data-label="SPEAKER_0"] .speaker-current'), {
      timeout: 10_000,
    }).toContain('Ada');
    expect((await rest(`/meetings/${meetingId}/speaker-labels`)).items[0]).toMatchObject({
      speaker_label: 'SPEAKER_0',
      person_id: ada,
    });
    expect((await rest('/people?q=Ada')).items).toHaveLength(1);

    // A new label whose voice is Ada's (the ML appends it with one of SPEAKER_0's embeddings): the
    // page suggests Ada beside it, and one click assigns her.
    const service = { authorization: `Bearer ${stack.config.SERVICE_AUTH_TOKEN}`, 'content-type': 'application/json' };
    const transcription = (await rest(`/meetings/${meetingId}/transcriptions`)).items.at(-1).id as string;
    const spoken = (await rest(`/transcriptions/${transcription}/segments?limit=200`)).items.find(
      (x: any) => x.feature_vector && x.speaker_label === 'SPEAKER_0',
    );
    // The batch pass completed this transcription, which then takes no append (409): the ML re-runs it.
    const setStatus = (status: string) =>
      fetch(`${stack.url}/transcriptions/${transcription}`, {
        method: 'PATCH',
        headers: service,
        body: JSON.stringify({ status }),
      });
    expect((await setStatus('transcribing')).status).toBe(200);
    const appended = await fetch(`${stack.url}/transcriptions/${transcription}/segments`, {
      method: 'POST',
      headers: service,
      body: JSON.stringify({
        segments: [
          {
            speaker_label: 'SPEAKER_7',
            text: 'and one more thing',
            start_ms: 60_000,
            feature_vector: spoken.feature_vector,
          },
        ],
      }),
    });
    expect(appended.status).toBe(204);
    for (const status of ['synthesizing', 'completed']) expect((await setStatus(status)).status).toBe(200);
    await page.waitForSelector(`.speaker-suggestion[data-label="SPEAKER_7"][data-person="${ada}"]`);
    await shot('09b-speaker-suggestion');
    await page.click(`.speaker-suggestion[data-label="SPEAKER_7"][data-person="${ada}"]`);
    await poll(() => page.textContent('.speaker[data-label="SPEAKER_7"] .speaker-current')).toContain('Ada');

    // A duplicate of Ada (made elsewhere) merges into her from her label's row, and is gone.
    const duplicate = await fetch(`${stack.url}/people`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ display_name: 'Ada L.' }),
    });
    const adaL = (await duplicate.json()).id as string;
    await page.waitForSelector(`.speaker-merge-from[data-label="SPEAKER_0"] option[value="${adaL}"]`, {
      state: 'attached',
    });
    await page.selectOption('.speaker-merge-from[data-label="SPEAKER_0"]', adaL);
    await page.click('.speaker-merge[data-label="SPEAKER_0"]');
    await poll(() => page.textContent('#speaker-message')).toContain('Ada L. merged into Ada');
    expect((await fetch(`${stack.url}/people/${adaL}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      404,
    );
    expect((await rest('/people?q=Ada')).items.map((p: any) => p.id)).toEqual([ada]);

    // A reload of the finished meeting: it reopens with its transcript and playable audio.
    await page.reload();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    await page.waitForFunction(
      () => (document.querySelector('#audio') as HTMLAudioElement).readyState >= 2,
      undefined,
      { timeout: 20_000 },
    );
    await poll(() => page.locator('.segment .speaker', { hasText: 'Ada' }).count()).toBeGreaterThanOrEqual(1);
    await page.waitForSelector('#conn-state.ready');

    // A phone-sized window: one column, nothing wider than the viewport.
    await page.setViewportSize({ width: 375, height: 800 });
    await poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const list = (await page.locator('.meetings-card').boundingBox())!;
    const pane = (await page.locator('#meeting-pane').boundingBox())!;
    expect(pane.y).toBeGreaterThanOrEqual(list.y + list.height); // the meeting below the list, not beside it
    await shot('10-narrow');
    await page.setViewportSize({ width: 1440, height: 1000 });

    // Back and forward between two meetings: each reopens the one its URL names.
    await page.fill('#new-meeting-title', 'E2E notes');
    await page.selectOption('#new-meeting-type', 'text');
    await page.click('#create-meeting');
    await poll(() => page.textContent('#meeting-title')).toBe('E2E notes');
    const notesId = (await page.getAttribute('.meeting', 'data-id'))!;
    expect(new URL(page.url()).hash).toBe(`#/meetings/${notesId}`);
    await poll(() => page.textContent('#audio-info')).toContain('no audio'); // and asked for none
    await page.goBack();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    await poll(() => page.getAttribute('.meeting-item.selected', 'data-id')).toBe(meetingId);
    await page.goForward();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(notesId);

    // The REST view agrees with the page.
    const rec = await (
      await fetch(`${stack.url}/meetings/${meetingId}/recording`, { headers: { authorization: `Bearer ${token}` } })
    ).json();
    expect(rec).toMatchObject({
      state: 'finalized',
      missing_ranges: [],
      highest_contiguous_sequence: final.captured - 1,
    });

    // A second take of the meeting: both are listed, the newest plays, and the first can be played again.
    await page.goBack();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    await page.waitForSelector('#conn-state.ready');
    await page.click('#record-start');
    await untilPage('second take', snapshot, (s) => s.phase === 'recording' && s.captured >= 20, 30_000);
    await page.click('#record-stop');
    const second = await untilPage(
      'finalized',
      snapshot,
      (s) => s.phase === 'finalized' || s.phase === 'failed',
      60_000,
    );
    expect(second).toMatchObject({ phase: 'finalized', audioVersion: rec.audio_version + 1 });
    const takes = (await rest(`/meetings/${meetingId}/recording/takes`)).items as { audio_version: number }[];
    expect(takes.map((t) => t.audio_version)).toEqual([rec.audio_version, rec.audio_version + 1]);
    await poll(() =>
      page.locator('#takes .take').evaluateAll((els) => els.map((e) => e.getAttribute('data-version'))),
    ).toEqual(takes.map((t) => String(t.audio_version)));
    await poll(() => page.getAttribute('#takes .take.playing', 'data-version')).toBe(String(second.audioVersion));
    await page.click(`.take-play[data-version="${rec.audio_version}"]`);
    await poll(() => page.getAttribute('#takes .take.playing', 'data-version')).toBe(String(rec.audio_version));
    await page.waitForFunction(
      (frames) => Math.abs((document.querySelector('#audio') as HTMLAudioElement).duration - frames / 10) < 0.5,
      final.captured,
      { timeout: 20_000 },
    );
    expect(await page.textContent('#audio-info')).toContain(`take ${rec.audio_version}`);
    await shot('10b-takes');

    // The whole way, the page's only failed request is the 409 it was meant to get: nothing
    // polled for audio or a recording that did not exist yet.
    expect(failedRequests).toEqual(['POST /people 409']);
  }, 240_000);

  it('should search (both sorts), export the transcript and correct a segment', async () => {
    // Its own meeting and transcript (made over REST), so it does not hang on the recording test.
    await page.goto(`${stack.url}/console`);
    if (!(await page.evaluate(() => localStorage.getItem('mi-console-token')))) {
      await page.fill('#mint-name', 'e2e-alice');
      await page.click('#mint');
    }
    await page.waitForSelector('#conn-state.ready');
    const failedBefore = failedRequests.length;
    const token = (await page.evaluate(() => localStorage.getItem('mi-console-token')))!;
    const call = async (method: string, p: string, body?: unknown, bearer = token) => {
      const headers = {
        authorization: `Bearer ${bearer}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      };
      const res = await fetch(`${stack.url}${p}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, `${method} ${p}`).toBeLessThan(300);
      return res.status === 204 ? null : res.json();
    };
    const rest = (p: string) => call('GET', p);
    const auth = { headers: { authorization: `Bearer ${token}` } };
    const meetingId = (await call('POST', '/meetings', { title: 'E2E quarterly review', source_type: 'text' })).id;
    const transcription = await call('POST', `/meetings/${meetingId}/transcriptions`);
    const segments = [
      { speaker_label: 'SPEAKER_0', text: 'The quarterly budget is approved', start_ms: 0, end_ms: 2000 },
      { speaker_label: 'SPEAKER_1', text: 'Budget owners report next week', start_ms: 2000, end_ms: 4000 },
    ];
    await call('POST', `/transcriptions/${transcription.id}/segments`, { segments }, stack.config.SERVICE_AUTH_TOKEN);
    const [first] = (await rest(`/transcriptions/${transcription.id}/segments?limit=1`)).items;
    const word = 'budget';

    // Search: results with the word marked, best first, then newest first; a hit opens its meeting.
    await page.fill('#search-q', word);
    await page.click('#search-form button[type=submit]');
    await poll(() => page.locator('#search-results .search-hit').count()).toBeGreaterThan(0);
    expect((await page.locator('#search-results mark').first().textContent())!.toLowerCase()).toBe(word);
    const best = await page
      .locator('#search-results .search-hit')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
    const api = await rest(`/search?q=${encodeURIComponent(word)}&limit=20`);
    expect(best).toEqual(api.items.map((i: { id: string }) => i.id));
    await page.selectOption('#search-sort', 'recent');
    const newest = await rest(`/search?q=${encodeURIComponent(word)}&sort=recent&limit=20`);
    await poll(() =>
      page.locator('#search-results .search-hit').evaluateAll((els) => els.map((e) => e.getAttribute('data-id'))),
    ).toEqual(newest.items.map((i: { id: string }) => i.id));
    await shot('11-search');
    await page.locator(`#search-results .search-hit[data-id="${first.id}"] a`).click();
    await poll(() => page.getAttribute('.meeting', 'data-id')).toBe(meetingId);
    await poll(() => page.locator('.segment').count()).toBeGreaterThan(0);

    // Export: each button downloads the transcript in its format, as the server exports it.
    for (const [format, starts] of [
      ['vtt', 'WEBVTT'],
      ['srt', '1'],
      ['json', '{'],
    ] as const) {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.click(`#export [data-format=${format}]`),
      ]);
      expect(download.suggestedFilename()).toBe(`transcript-${transcription.id}.${format}`);
      const text = readFileSync((await download.path())!, 'utf8');
      expect(text.startsWith(starts), `${format}: ${text.slice(0, 40)}`).toBe(true);
      const served = await (
        await fetch(`${stack.url}/transcriptions/${transcription.id}/export?format=${format}`, auth)
      ).text();
      expect(text).toBe(served);
    }

    // Edit: the first segment's text corrected in place; the server has it.
    const row = page.locator(`.segment[data-id="${first.id}"]`);
    await row.locator('.segment-edit-open').click();
    await row.locator('.segment-edit').fill('Corrected in the console');
    await row.locator('.segment-save').click();
    await poll(() => row.locator('.text').textContent()).toBe('Corrected in the console');
    const saved = (await rest(`/transcriptions/${transcription.id}/segments?limit=1`)).items[0];
    expect(saved).toMatchObject({ id: first.id, text: 'Corrected in the console' });
    await shot('12-segment-edited');

    // The second segment moves to the other speaker label (PATCH speaker_label); the server has it.
    const [, other] = (await rest(`/transcriptions/${transcription.id}/segments?limit=2`)).items;
    const moved = page.locator(`.segment[data-id="${other.id}"]`);
    await moved.locator('.segment-edit-open').click();
    await moved.locator('.segment-speaker').selectOption('SPEAKER_0');
    await moved.locator('.segment-save').click();
    await poll(() => moved.locator('.speaker').textContent()).toBe('SPEAKER_0');
    expect(await rest(`/transcript-segments/${other.id}`)).toMatchObject({
      speaker_label: 'SPEAKER_0',
      text: other.text,
    });

    // Changed elsewhere while the editor is open: the save answers 412, the row says so, and
    // reload shows the other change (which the page's save did not overwrite).
    await moved.locator('.segment-edit-open').click();
    await moved.locator('.segment-editor[data-etag]').waitFor();
    await call('PATCH', `/transcript-segments/${other.id}`, { text: 'Changed in another tab' });
    await moved.locator('.segment-edit').fill('Changed in the console');
    await moved.locator('.segment-save').click();
    await poll(() => moved.locator('.segment-message').textContent()).toContain('Changed elsewhere, reload');
    expect(await moved.locator('.segment-message').isVisible()).toBe(true);
    await shot('12b-changed-elsewhere');
    expect(await rest(`/transcript-segments/${other.id}`)).toMatchObject({ text: 'Changed in another tab' });
    await moved.locator('.segment-reload').click();
    await poll(() => moved.locator('.text').textContent()).toBe('Changed in another tab');
    expect(await moved.locator('.segment-editor').count()).toBe(0);

    // A second transcription: the newest is shown, and the first can be chosen again.
    const second = await call('POST', `/meetings/${meetingId}/transcriptions`);
    const again = [{ speaker_label: 'SPEAKER_0', text: 'A second pass of the budget', start_ms: 0, end_ms: 2000 }];
    await call('POST', `/transcriptions/${second.id}/segments`, { segments: again }, stack.config.SERVICE_AUTH_TOKEN);
    // The page learns of it from the WebSocket (EntityChanged, TranscriptSegmentEvent).
    await poll(() => page.locator('#transcription-select option').count()).toBe(2);
    await poll(() => page.locator('.segment .text').first().textContent()).toBe('A second pass of the budget');
    await page.selectOption('#transcription-select', transcription.id);
    await poll(() => page.locator('.segment .text').first().textContent()).toBe('Corrected in the console');
    expect(failedRequests.slice(failedBefore)).toEqual([`PATCH /transcript-segments/${other.id} 412`]);
  }, 120_000);

  it('should create a webhook (secret shown once), send a test, list its deliveries and rotate its secret', async () => {
    let secret = '';
    const receiver = await new Receiver(() => secret).start();
    try {
      await page.goto(`${stack.url}/console`);
      if (!(await page.evaluate(() => localStorage.getItem('mi-console-token')))) {
        await page.fill('#mint-name', 'e2e-alice');
        await page.click('#mint');
      }
      await page.waitForSelector('#conn-state.ready');
      const failedBefore = failedRequests.length;
      await page.click('#open-webhooks');
      expect(new URL(page.url()).hash).toBe('#/webhooks');

      // Create: the secret is shown once, the endpoint listed.
      await page.fill('#webhook-url', receiver.url);
      await page.selectOption('#webhook-types', '*');
      await page.click('#webhook-create');
      await page.waitForSelector('#webhook-secret');
      secret = (await page.textContent('#webhook-secret'))!;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const item = page.locator('.webhook', { hasText: receiver.url });
      await poll(() => item.count()).toBe(1);
      const id = (await item.getAttribute('data-id'))!;
      await shot('13-webhook-created');

      // Shown once: a reload lists the endpoint without it.
      await page.reload();
      await page.waitForSelector(`.webhook[data-id="${id}"]`);
      expect(await page.locator('#webhook-secret').count()).toBe(0);
      expect(await page.content()).not.toContain(secret);

      // Test: the receiver gets a WebhookTest signed with the secret; the deliveries list its 200.
      await page.click(`.webhook-test[data-id="${id}"]`);
      await poll(() => receiver.ids().length, { timeout: 20_000 }).toBe(1);
      expect(receiver.received[0]).toMatchObject({ verified: true, body: { type: 'WebhookTest', webhook_id: id } });
      const testId = receiver.received[0].id;
      expect(await page.textContent('#webhook-test-queued')).toContain(testId);
      await page.click(`.webhook-deliveries-open[data-id="${id}"]`);
      await poll(
        async () => {
          await page.click('#webhook-deliveries-refresh');
          return page.getAttribute(`.webhook-attempt[data-event="${testId}"]`, 'data-status');
        },
        { timeout: 20_000 },
      ).toBe('200');
      await shot('14-webhook-deliveries');

      // Rotate: a new secret shown; the next delivery verifies with the new secret and the old one.
      await page.click(`.webhook-rotate[data-id="${id}"]`);
      await poll(() => page.textContent('#webhook-secret')).not.toBe(secret);
      const rotated = (await page.textContent('#webhook-secret'))!;
      expect(rotated).toMatch(/^whsec_/);
      await shot('15-webhook-rotated');
      await page.click(`.webhook-test[data-id="${id}"]`);
      await poll(() => receiver.ids().length, { timeout: 20_000 }).toBe(2);
      const after = receiver.received[1];
      for (const s of [rotated, secret]) expect(new Webhook(s).verify(after.raw, after.headers)).toBeTruthy();
      expect(failedRequests.slice(failedBefore)).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 120_000);
});
