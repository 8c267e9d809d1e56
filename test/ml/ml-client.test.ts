// The core's side of the published ML contract (lib/ml/documents.ts), over real HTTP and
// WebSocket against a small ML double speaking the protocol: what the core sends validates
// against the published documents, it takes both drain answers (200 report, 204), names what is
// wrong with an answer it cannot use, and answers an ML message it cannot use instead of
// dropping it silently.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Parser } from '@asyncapi/parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { createLogger } from '@mi/lib/telemetry/log';
import { ML_MESSAGE_MAX_BYTES } from '@mi/lib/ml/contract';
import { mlAsyncApiDocument, mlOpenApiDocument } from '@mi/lib/ml/documents';
import { MlStream, type MlHealth } from '@mi/live/ml-client';

const openapi = mlOpenApiDocument();
const asyncapi = mlAsyncApiDocument();
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const startBody = ajv.compile(openapi.paths['/streaming'].post.requestBody.content['application/json'].schema);

interface Double {
  url: string;
  server: Server;
  bodies: unknown[];
  /** What the core sent on the audio socket as text (rejections). */
  texts: unknown[];
  socket: WebSocket | null;
}

type Answer = (req: IncomingMessage, res: ServerResponse, double: Double) => void;
const session: Answer = (_req, res, d) =>
  void res
    .writeHead(201, { 'content-type': 'application/json' })
    .end(JSON.stringify({ id: 's1', audio_url: `${d.url.replace('http', 'ws')}/audio/s1` }));

async function mlDouble(answers: { post?: Answer; del?: Answer } = {}): Promise<Double> {
  const d: Double = { url: '', server: createServer(), bodies: [], texts: [], socket: null };
  const wss = new WebSocketServer({ noServer: true });
  d.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') {
        d.bodies.push(JSON.parse(Buffer.concat(chunks).toString()));
        return (answers.post ?? session)(req, res, d);
      }
      (answers.del ?? ((_q, r) => void r.writeHead(204).end()))(req, res, d);
    });
  });
  d.server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      d.socket = ws;
      ws.on('message', (data, isBinary) => {
        if (!isBinary) d.texts.push(JSON.parse(String(data)));
      });
    }),
  );
  await new Promise<void>((r) => d.server.listen(0, '127.0.0.1', r));
  d.url = `http://127.0.0.1:${(d.server.address() as AddressInfo).port}`;
  return d;
}

let double: Double | null = null;
let stream: MlStream | null = null;
afterEach(async () => {
  stream?.close();
  if (!double) return;
  const { server } = double;
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  double = null;
});

const init = {
  meeting_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
  transcription_id: '5d2f8a41-6c3b-4e7d-9a0f-1b2c3d4e5f60',
  audio_version: 1,
  encoding: 'pcm_s16le' as const,
  sample_rate: 16000,
  start_sequence: 0,
};

function open(d: Double, health: MlHealth[] = []): MlStream {
  const log = createLogger({ level: 'silent', name: 'test' });
  return new MlStream({
    baseUrl: d.url,
    token: 'x'.repeat(20),
    init,
    log,
    trace: {},
    forwardEveryMs: 0,
    onHealth: (h) => void health.push(h),
  });
}

describe('the published documents', () => {
  it('should parse the audio socket AsyncAPI document without errors and name every message both ways', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(asyncapi));
    expect(
      diagnostics.filter((x) => x.severity === 0).map((x) => `${x.code}: ${x.message} at ${x.path.join('.')}`),
    ).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(Object.keys(asyncapi.channels.audio.messages).sort()).toEqual([
      'AudioFrame',
      'Dropped',
      'Rejected',
      'Warning',
    ]);
  });

  it('should describe both drain answers and the session answer', () => {
    const del = openapi.paths['/streaming/{id}'].delete.responses;
    expect(Object.keys(del)).toEqual(expect.arrayContaining(['200', '204']));
    const created = openapi.paths['/streaming'].post.responses['201'].content['application/json'].schema as {
      required: string[];
    };
    expect(created.required.sort()).toEqual(['audio_url', 'id']);
  });
});

describe('what the core sends and accepts', () => {
  it('should send a POST /streaming body the published OpenAPI document accepts, resume included', async () => {
    double = await mlDouble();
    stream = open(double);
    await expect.poll(() => double!.bodies.length).toBe(1);
    stream.close();
    stream = new MlStream({
      baseUrl: double.url,
      token: 'x'.repeat(20),
      init: { ...init, start_sequence: 420 },
      log: createLogger({ level: 'silent', name: 't' }),
      trace: {},
      forwardEveryMs: 0,
      onHealth: () => undefined,
    });
    await expect.poll(() => double!.bodies.length).toBe(2);
    for (const body of double.bodies) expect(startBody(body) ? [] : startBody.errors).toEqual([]);
    expect(double.bodies[1]).toMatchObject({ start_sequence: 420 });
  });

  it('should take 204 to DELETE as drained, and a 200 drain report as it is', async () => {
    double = await mlDouble();
    stream = open(double);
    await expect.poll(() => double!.socket !== null).toBe(true);
    expect(await stream.drain(2000)).toEqual({ drained: true });

    double.server.closeAllConnections();
    await new Promise((r) => double!.server.close(r));
    double = await mlDouble({
      del: (_q, res) =>
        void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"drained":false,"processed":7,"dropped":2}'),
    });
    stream = open(double);
    await expect.poll(() => double!.socket !== null).toBe(true);
    expect(await stream.drain(2000)).toEqual({ drained: false, processed: 7, dropped: 2 });
  });

  it('should name what is wrong with a drain report or a session it cannot use', async () => {
    double = await mlDouble({
      del: (_q, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
    });
    stream = open(double);
    await expect.poll(() => double!.socket !== null).toBe(true);
    expect(await stream.drain(2000)).toEqual({
      drained: false,
      error: expect.stringMatching(/^DELETE answered 200 without a drain report: drained: /),
    });

    double.server.closeAllConnections();
    await new Promise((r) => double!.server.close(r));
    double = await mlDouble({
      post: (_q, res) =>
        void res.writeHead(201, { 'content-type': 'application/json' }).end('{"session_id":"s1","url":"ws://x"}'),
    });
    const health: MlHealth[] = [];
    stream = open(double, health);
    await expect.poll(() => health.length).toBe(1);
    expect(health[0]).toMatchObject({ source: 'core', code: 'ml_unavailable' });
    expect(health[0].detail.error).toMatch(/^POST \/streaming answered 201 without a session: id: .*; audio_url: /);
  });

  it('should turn warning and dropped into health, and answer every other ML message with a rejection', async () => {
    double = await mlDouble();
    const health: MlHealth[] = [];
    stream = open(double, health);
    await expect.poll(() => double!.socket !== null).toBe(true);
    const ml = double.socket!;
    ml.send(JSON.stringify({ type: 'warning', code: 'no_audio_detected', detail: { window_seconds: 5 } }));
    await expect.poll(() => health.length).toBe(1);
    expect(health[0]).toEqual({ source: 'ml', code: 'no_audio_detected', detail: { window_seconds: 5 } });

    ml.send('not json');
    ml.send(JSON.stringify({ type: 'transcript', text: 'hi' }));
    ml.send(JSON.stringify({ type: 'dropped', count: -1 }));
    ml.send(Buffer.from([1, 2, 3]));
    await expect.poll(() => double!.texts.length).toBe(4);
    expect(double.texts).toEqual([
      { type: 'rejected', reason: 'not_json', detail: expect.any(String) },
      { type: 'rejected', reason: 'unknown_type', detail: expect.stringContaining('"transcript"') },
      { type: 'rejected', reason: 'invalid', detail: expect.stringMatching(/^count: /) },
      { type: 'rejected', reason: 'binary', detail: expect.any(String) },
    ]);
    expect(health).toHaveLength(1);
  });

  it('should close the socket (1009) on an ML message above the bound, and open a new session', async () => {
    double = await mlDouble();
    const health: MlHealth[] = [];
    stream = open(double, health);
    await expect.poll(() => double!.socket !== null).toBe(true);
    const first = double.socket!;
    const closed = new Promise<number>((r) => first.once('close', (code) => r(code)));
    first.send(JSON.stringify({ type: 'warning', code: 'x', detail: { pad: 'a'.repeat(ML_MESSAGE_MAX_BYTES) } }));
    expect(await closed).toBe(1009);
    await expect.poll(() => double!.bodies.length, { timeout: 5000 }).toBe(2);
    expect(health.map((h) => h.code)).toContain('ml_unavailable');
  });
});
