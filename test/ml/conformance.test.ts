// The ML conformance kit (scripts/ml-conformance) against a real core: it fails MLs that break the
// contract in ways the stand-in's fault switch does not cover, each at the check that names the
// break (the stand-in and its faults: conformance-kit.test.ts).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { createBus } from '@mi/lib/adapters/bus';
import { mlBatchSubscription } from '@mi/lib/ml/contract';
import { runSweep } from '../../functions/sweep';
import { runConformance, type Check } from '../../scripts/ml-conformance/run';
import { fileEnv, openTestDatabase, startInstance, type Instance } from '../live/helpers';

let database: OpenedDatabase;
/** A core with no ML: a broken ML's batch worker (if any) pulls its recording.finalized. */
let bare: Instance;
let sweep: NodeJS.Timeout;

beforeAll(async () => {
  database = await openTestDatabase();
  bare = await startInstance(database, fileEnv());
  // As the local stack does: the sweep finalizes stopped takes (and publishes recording.finalized).
  sweep = setInterval(() => void runSweep(bare.rt).catch(() => undefined), 200);
}, 60_000);

afterAll(async () => {
  clearInterval(sweep);
  await bare?.close();
  await database?.close();
});

const kitOptions = (on: Instance, mlUrl: string, timeoutMs: number) => ({
  mlUrl,
  core: {
    url: on.url,
    serviceToken: on.config.SERVICE_AUTH_TOKEN,
    identitySecret: on.config.IDENTITY_SECRET_KEY!,
    storageEmulator: on.config.STORAGE_EMULATOR_HOST!,
  },
  pubsub: {
    projectId: on.config.GOOGLE_CLOUD_PROJECT,
    emulatorHost: on.config.PUBSUB_EMULATOR_HOST,
    topic: on.config.PUBSUB_TOPIC_RECORDING_FINALIZED,
  },
  timeoutMs,
  finalizeMs: 5_000,
  quietMs: Math.min(timeoutMs, 5_000),
});

interface BrokenMlBehaviour {
  /** The 201 body of POST /streaming, given the session id and its socket URL. */
  session?: (id: string, audioUrl: string) => unknown;
  drain?: (res: ServerResponse) => void;
  onSocket?: (ws: WebSocket) => void;
}

/** An ML that keeps the live contract, except where `behaviour` says; it never calls the core. */
async function brokenMl(behaviour: BrokenMlBehaviour): Promise<{ url: string; server: Server }> {
  const server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  const sessions = new Set<string>();
  let url = '';
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const token = bare.config.SERVICE_AUTH_TOKEN;
      if (req.headers.authorization !== `Bearer ${token}`) return void res.writeHead(401).end();
      if (req.method === 'POST' && req.url === '/streaming') {
        const id = randomUUID();
        sessions.add(id);
        const audioUrl = `${url.replace('http', 'ws')}/audio/${id}`;
        const body = behaviour.session ? behaviour.session(id, audioUrl) : { id, audio_url: audioUrl };
        return void res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }
      const m = /^\/streaming\/(.+)$/.exec(new URL(req.url ?? '/', 'http://ml').pathname);
      if (req.method === 'DELETE' && m && sessions.has(m[1])) {
        return void (behaviour.drain ? behaviour.drain(res) : res.writeHead(204).end());
      }
      res.writeHead(404).end();
    });
  });
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => behaviour.onSocket?.(ws)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, server };
}

/**
 * The batch worker of an ML that breaks the batch contract as `how` says: it pulls the bare core's
 * recording.finalized and, when honest, claims the take, reads its audio and completes it.
 */
async function batchWorker(how: { readAudio: boolean; honourClaim: boolean }) {
  const { config } = bare;
  const bus = createBus({ projectId: config.GOOGLE_CLOUD_PROJECT, emulatorHost: config.PUBSUB_EMULATOR_HOST });
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${bare.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${config.SERVICE_AUTH_TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const topic = config.PUBSUB_TOPIC_RECORDING_FINALIZED;
  await bus.ensureQueue(topic, mlBatchSubscription(topic));
  const sub = await bus.subscribeQueue(topic, mlBatchSubscription(topic), async ({ data }) => {
    const msg = data as { meeting_id: string; audio_version: number; transcription_id: string };
    const [meeting, transcription] = [`/meetings/${msg.meeting_id}`, `/transcriptions/${msg.transcription_id}`];
    const claim = await call('PATCH', transcription, { status: 'synthesizing' });
    if (claim.status !== 200 && how.honourClaim) return;
    if (how.readAudio) {
      const links = await call('GET', `${meeting}/audio-url?audio_version=${msg.audio_version}`);
      await (await fetch(((await links.json()) as { url: string }).url)).arrayBuffer();
    }
    const segment = { id: randomUUID(), speaker_label: 'SPEAKER_0', text: 'Hello.', start_ms: 0, end_ms: 900 };
    await call('PUT', `${transcription}/segments`, { segments: [{ ...segment, confidence: 0.9, is_final: true }] });
    await call('PUT', `${meeting}/synthesis`, { summary: 'A greeting.', key_points: [], topics: [] });
    await call('PATCH', meeting, { headline: 'A greeting' });
    await call('PATCH', transcription, { status: 'completed' });
  });
  return async () => {
    await sub.close();
    await bus.close();
  };
}

async function runAgainst(
  behaviour: BrokenMlBehaviour,
  batch?: Parameters<typeof batchWorker>[0],
  timeoutMs = 1_000,
): Promise<Check[]> {
  const ml = await brokenMl(behaviour);
  const stopBatch = batch ? await batchWorker(batch) : null;
  try {
    return await runConformance(kitOptions(bare, ml.url, timeoutMs));
  } finally {
    await stopBatch?.();
    ml.server.closeAllConnections();
    ml.server.close();
  }
}

const byName = (checks: Check[], prefix: string) => checks.find((c) => c.name.startsWith(prefix));

describe('ML conformance kit', () => {
  it('should fail an ML answering the session start without audio_url, and stop there', async () => {
    const checks = await runAgainst({ session: (id) => ({ id }) });
    const start = byName(checks, 'POST /streaming answers 201');
    expect(start).toMatchObject({ pass: false });
    expect(start!.reason).toContain('audio_url');
    expect(checks.at(-1)).toBe(start);
  });

  it('should fail an ML whose audio_url is not a WebSocket URL (a rule only the contract module holds)', async () => {
    const checks = await runAgainst({ session: (id) => ({ id, audio_url: `http://127.0.0.1:9/${id}` }) });
    const start = byName(checks, 'POST /streaming answers 201');
    expect(start).toMatchObject({ pass: false });
    expect(start!.reason).toContain('ws:// or wss://');
  });

  it('should fail an ML whose drain answers 200 without a drain report', async () => {
    const drain = (res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    const checks = await runAgainst({ drain });
    const check = byName(checks, 'DELETE /streaming/{id} drains');
    expect(check).toMatchObject({ pass: false, reason: expect.stringContaining('drained') });
    expect(byName(checks, 'POST /streaming answers 201')).toMatchObject({ pass: true });
  });

  it('should fail an ML sending a message type the AsyncAPI document does not have', async () => {
    const checks = await runAgainst({ onSocket: (ws) => ws.send(JSON.stringify({ type: 'warn', message: 'full' })) });
    const check = byName(checks, 'messages on the audio socket');
    expect(check).toMatchObject({ pass: false, reason: expect.stringContaining('"warn"') });
  });

  it('should fail an ML that never calls the core back, live or batch', async () => {
    const checks = await runAgainst({});
    expect(byName(checks, 'live segments reach the core')).toMatchObject({ pass: false });
    const batch = byName(checks, 'recording.finalized: the ML claims');
    expect(batch).toMatchObject({ pass: false, reason: expect.stringContaining('still transcribing') });
    expect(byName(checks, 'DELETE /streaming/{id} of an unknown session')).toMatchObject({ pass: true });
  });

  it('should fail an ML whose batch pass completes the take without reading its audio', async () => {
    const checks = await runAgainst({}, { readAudio: false, honourClaim: true }, 15_000);
    expect(byName(checks, 'the claimed batch pass completes')).toMatchObject({ pass: true });
    expect(byName(checks, "the ML read the take's audio")).toMatchObject({
      pass: false,
      reason: expect.stringContaining('never read'),
    });
    expect(byName(checks, 'a redelivered recording.finalized')).toMatchObject({ pass: true });
  });

  it("should fail an ML that runs a second pass on a redelivered message (ignoring its claim's 409)", async () => {
    const checks = await runAgainst({}, { readAudio: true, honourClaim: false }, 15_000);
    expect(byName(checks, "the ML read the take's audio")).toMatchObject({ pass: true });
    expect(byName(checks, 'a redelivered recording.finalized')).toMatchObject({
      pass: false,
      reason: expect.stringContaining('a second pass ran'),
    });
  });

  it('should print the table and exit 1 from the command line when a check fails', async () => {
    const ml = await brokenMl({ session: (id) => ({ id }) });
    try {
      const args = ['tsx', 'scripts/ml-conformance/main.ts', '--url', ml.url, '--core-url', bare.url, '--timeout', '1'];
      const child = spawn('npx', args, {
        env: {
          ...process.env,
          DATA_DIR: `/nonexistent-${randomUUID()}`,
          SERVICE_AUTH_TOKEN: bare.config.SERVICE_AUTH_TOKEN,
          IDENTITY_SECRET_KEY: bare.config.IDENTITY_SECRET_KEY!,
          PUBSUB_EMULATOR_HOST: bare.config.PUBSUB_EMULATOR_HOST!,
          STORAGE_EMULATOR_HOST: bare.config.STORAGE_EMULATOR_HOST!,
        },
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      expect(code).toBe(1);
      expect(out).toMatch(
        /POST \/streaming answers 201 with a session \(OpenAPI startStreaming\)\s+FAIL\s+.*audio_url/,
      );
      expect(out).toContain('1 of 5 checks failed');
    } finally {
      ml.server.closeAllConnections();
      ml.server.close();
    }
  });
});
