// `npm start` with ML_SERVICE_URL (decisions.md section 7): the stack runs against that ML service
// and starts no fake ML nor fake batch worker. The ML here is a small one written from the
// published documents only (POST /streaming → 201 {id, audio_url}, frames on the socket, 204 to
// the drain), listening on ML_PORT itself: a stack that still started its stand-in would fail to
// start. The batch message waits on recording.finalized.ml-batch for a puller of its own client.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PubSub, type Message } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { startLocalStack, type LocalStack } from '../../emulators/stack';
import { TestClient, type Instance, createMeeting } from '../live/helpers';
import { emulatorAuth } from '@mi/lib/adapters/google-auth';

interface SmallMl {
  url: string;
  server: Server;
  starts: Record<string, unknown>[];
  frames: number;
  drains: number;
}

async function smallMl(): Promise<SmallMl> {
  const ml: SmallMl = { url: '', server: createServer(), starts: [], frames: 0, drains: 0 };
  const wss = new WebSocketServer({ noServer: true });
  ml.server.on('request', (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/streaming') {
        ml.starts.push(JSON.parse(body));
        const id = randomUUID();
        return void res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id, audio_url: `${ml.url.replace('http', 'ws')}/audio/${id}` }));
      }
      if (req.method === 'DELETE') {
        ml.drains++;
        return void res.writeHead(204).end();
      }
      res.writeHead(404).end();
    });
  });
  ml.server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (_d, binary) => void (binary && ml.frames++))),
  );
  await new Promise<void>((r) => ml.server.listen(0, '127.0.0.1', r));
  ml.url = `http://127.0.0.1:${(ml.server.address() as AddressInfo).port}`;
  return ml;
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-external-ml-'));
const topic = `finalized-${randomUUID().slice(0, 8)}`;
let ml: SmallMl;
let stack: LocalStack;

beforeAll(async () => {
  ml = await smallMl();
  const env = inject('emulatorEnv');
  stack = await startLocalStack({
    ...process.env,
    ...env,
    APP_ENV: 'development',
    RECORDING_GAP_SWEEP_INTERVAL_SECONDS: '0.5', // the conformance kit's stored take is finalized at once
    DATA_DIR: dataDir,
    CORE_PORT: '0',
    ML_PORT: new URL(ml.url).port,
    ML_SERVICE_URL: ml.url,
    LOG_LEVEL: 'warn',
    STORAGE_BUCKET: 'external-ml-test',
    PUBSUB_TOPIC_RECORDING_FINALIZED: topic,
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  ml?.server.closeAllConnections();
  ml?.server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start with ML_SERVICE_URL', () => {
  it('should stream a take to that ML service: session start, frames, drain', async () => {
    const user = await mintDevToken(stack.config.IDENTITY_SECRET_KEY!, 'external-ml');
    const meetingId = await createMeeting({ url: stack.url } as Instance, user);
    const client = await TestClient.connect(`${stack.url.replace('http', 'ws')}/ws`, user);
    await client.start(meetingId);
    await expect.poll(() => ml.starts.length, { timeout: 20_000 }).toBe(1);
    expect(ml.starts[0]).toMatchObject({
      meeting_id: meetingId,
      audio_version: 1,
      start_sequence: 0,
      encoding: 'pcm_s16le',
    });
    for (let seq = 0; seq < 10; seq++) client.frame(seq);
    await expect.poll(() => ml.frames, { timeout: 20_000 }).toBe(10);
    client.send({ type: 'StopRecordingCommand', meeting_id: meetingId });
    await expect.poll(() => ml.drains, { timeout: 20_000 }).toBe(1);
    client.ws.close();
  });

  it('should publish the ML contract documents', async () => {
    for (const doc of ['openapi.json', 'asyncapi.json', 'recording-finalized.schema.json']) {
      expect((await fetch(`${stack.url}/ml-contract/${doc}`)).status).toBe(200);
    }
  });

  it('should keep recording.finalized on recording.finalized.ml-batch for the ML to pull', async () => {
    const message = {
      meeting_id: randomUUID(),
      audio_version: 1,
      transcription_id: null,
      storage_path: null,
      is_degraded: false,
      missing_ranges: [],
      attempt: 1,
    };
    await stack.rt.bus.publish(topic, message);
    const pubsub = new PubSub({
      projectId: stack.config.GOOGLE_CLOUD_PROJECT,
      apiEndpoint: stack.config.PUBSUB_EMULATOR_HOST,
      emulatorMode: true,
      authClient: emulatorAuth(),
    });
    const subscription = pubsub.subscription(`${topic}.ml-batch`);
    const received = await new Promise<unknown>((resolve) =>
      subscription.on('message', (m: Message) => {
        m.ack();
        resolve(JSON.parse(m.data.toString()));
      }),
    );
    expect(received).toEqual(message);
    await subscription.close();
    await pubsub.close();
  });

  it('should let the conformance kit find the stack from .data/local-stack.env alone', async () => {
    // Only --url: the core's URL, credentials and Pub/Sub come from the file the stack wrote.
    const args = ['tsx', 'scripts/ml-conformance/main.ts', '--url', ml.url, '--timeout', '1'];
    const fromStack = /^(SERVICE_AUTH_TOKEN|IDENTITY_SECRET_KEY|PUBSUB_|GOOGLE_CLOUD_PROJECT|CORE_)/;
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !fromStack.test(k)));
    const child = spawn('npx', args, { env: { ...env, DATA_DIR: dataDir } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(out).toMatch(/setup: a meeting and a transcription on the core\s+pass/);
    expect(out).toMatch(/POST \/streaming answers 201 with a session \(OpenAPI startStreaming\)\s+pass/);
    expect(out).toMatch(/DELETE \/streaming\/\{id\} drains: 200 with a drain report, or 204\s+pass/);
    // This small ML never calls the core back: the kit says so and fails.
    expect(out).toMatch(/live segments reach the core .*\s+FAIL/);
    expect(code).toBe(1);
  });
});
