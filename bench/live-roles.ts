// The child roles of the live benchmarks (bench/live.ts, bench/fanout.ts), each run as
// `tsx bench/live-roles.ts <role>`: `bare` (a ws server that only counts frames), `load` (the
// recordings and viewer tabs of a plan: frames at 10/s, acknowledgement latency) and `ml` (an ML
// service that takes sessions and drops their frames).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { sleep, withTimeout } from '@mi/lib/async';

export const FRAME_BYTES = 3200;
export const FRAME_MS = 100;
/** Progress per stored segment (2 s): what frame→durable-ack can be measured against. */
export const SEGMENT_MS = 2000;
/** How long the load waits for the last acknowledgements after its last frame. */
const DRAIN_MS = 15_000;
const START_TIMEOUT_MS = 60_000;
const START_ATTEMPTS = 5;

export interface Plan {
  mode: 'live' | 'bare';
  seconds: number;
  /** Each recording's tab on `wsUrl`; its user's viewer tabs (hello only) on `viewers`. */
  recordings: { token: string; meetingId: string; wsUrl: string; viewers?: string[] }[];
}

export interface LoadResult {
  /** What went wrong, by error code or close code. */
  problems: Record<string, number>;
  sent: number;
  acked: number;
  ackMs: number[];
  /** When each acknowledged frame was sent (epoch ms), in ackMs's order. */
  ackSentAt: number[];
  /** Events the viewer tabs received. */
  viewed: number;
}

const role = process.argv[2];
if (role === 'bare') await bareRole();
else if (role === 'ml') await mlRole();
else if (role === 'load') await loadRole(JSON.parse(readFileSync(process.argv[3], 'utf8')) as Plan);

async function bareRole(): Promise<void> {
  let frames = 0;
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => ws.on('message', (_d, isBinary) => void (isBinary && frames++)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // The count, once a second (the orchestrator takes the last).
  setInterval(() => console.log(JSON.stringify({ frames })), 1000);
  console.log(JSON.stringify({ ready: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => process.exit(0));
}

async function loadRole(plan: Plan): Promise<void> {
  const payload = Buffer.alloc(FRAME_BYTES);
  for (let i = 0; i < FRAME_BYTES / 2; i++) payload.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), i * 2);
  const ackMs: number[] = [];
  const ackSentAt: number[] = [];
  const problems: Record<string, number> = {};
  const problem = (what: string) => void (problems[what] = (problems[what] ?? 0) + 1);
  let sent = 0;
  let acked = 0;
  let viewed = 0;
  const viewers = await Promise.all(
    plan.recordings.flatMap((r) =>
      (r.viewers ?? []).map(async (url) => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
        ws.on(
          'message',
          (data) => void ((JSON.parse(String(data)) as { seq?: unknown }).seq !== undefined && viewed++),
        );
        ws.send(JSON.stringify({ type: 'hello', token: r.token, client_id: randomUUID() }));
        return ws;
      }),
    ),
  );

  // A recording whose hello or start the server refused (an overloaded database answers
  // `unavailable`) tries again, as a client does.
  const sessions = await Promise.all(
    plan.recordings.map(async (r, i) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await session(r, i);
        } catch (err) {
          if (attempt >= START_ATTEMPTS) throw err;
          problem('start retried');
          await sleep(1000 + Math.random() * 2000); // jittered: retries do not come back as one burst
        }
      }
    }),
  );

  async function session(r: Plan['recordings'][number], i: number) {
    const ws = new WebSocket(r.wsUrl, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
    ws.on('close', (code) => problem(`close ${code}`));
    const sentAt: number[] = [];
    let ackedUpTo = -1;
    const started = new Promise<void>((resolve, reject) => {
      ws.once('close', (code) => reject(new Error(`recording ${i} closed (${code}) before it started`)));
      ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as {
          type: string;
          highest_contiguous_sequence?: number;
          meeting_id?: string;
          code?: string;
        };
        if (m.type === 'RecordingStarted') resolve();
        if (m.type === 'error' || m.type === 'RecordingHealth') problem(`${m.type} ${m.code}`);
        if (m.type === 'AudioStoredProgressEvent' && m.meeting_id === r.meetingId) {
          const now = Date.now();
          for (let s = ackedUpTo + 1; s <= m.highest_contiguous_sequence!; s++)
            if (sentAt[s]) ackMs.push(now - sentAt[s]), ackSentAt.push(sentAt[s]), acked++;
          ackedUpTo = Math.max(ackedUpTo, m.highest_contiguous_sequence!);
        }
      });
    });
    if (plan.mode === 'live') {
      ws.send(JSON.stringify({ type: 'hello', token: r.token, client_id: randomUUID() }));
      ws.send(
        JSON.stringify({
          type: 'StartRecordingCommand',
          meeting_id: r.meetingId,
          encoding: 'pcm_s16le',
          sample_rate: 16000,
        }),
      );
      // A take that does not start is a failed run, not a hang.
      await withTimeout(started, START_TIMEOUT_MS).catch((err: Error) => {
        ws.terminate();
        throw new Error(
          `recording ${i} did not start within ${START_TIMEOUT_MS} ms (${err.message}); problems so far: ${JSON.stringify(problems)}`,
        );
      });
    }
    // Recordings start spread over one segment period, as independent users' do: their segments
    // fall due one after another, not all in the same 100 ms.
    return { ws, sentAt, offset: (i * SEGMENT_MS) / plan.recordings.length };
  }

  // The measured window starts with the first frame: take starts are not per-frame work.
  console.log(JSON.stringify({ sending: true }));
  // Every recording then sends a frame every 100 ms.
  const t0 = Date.now();
  const frames = (plan.seconds * 1000) / FRAME_MS;
  await Promise.all(
    sessions.map(async (s) => {
      await sleep(s.offset);
      for (let seq = 0; seq < frames; seq++) {
        const header = Buffer.alloc(8);
        header.writeBigUInt64BE(BigInt(seq));
        s.sentAt[seq] = Date.now();
        s.ws.send(Buffer.concat([header, payload]));
        sent++;
        await sleep(Math.max(0, t0 + s.offset + (seq + 1) * FRAME_MS - Date.now()));
      }
    }),
  );
  if (plan.mode === 'live') {
    const deadline = Date.now() + DRAIN_MS;
    while (acked < sent && Date.now() < deadline) await sleep(100);
  }
  const result: LoadResult = { problems, sent, acked, ackMs, ackSentAt, viewed };
  for (const s of sessions) s.ws.terminate();
  for (const ws of viewers) ws.terminate();
  // Exit once the (large) line is out: a pipe write is asynchronous.
  process.stdout.write(`${JSON.stringify({ result })}\n`, () => process.exit(0));
}

/** A stand-in ML service that takes sessions and drops their frames (its own process: it must not slow the database down). */
async function mlRole(): Promise<void> {
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') {
        const id = randomUUID();
        const { port } = server.address() as AddressInfo;
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id, audio_url: `ws://127.0.0.1:${port}/streaming/${id}/audio` }));
      } else
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ drained: true, processed: 0, dropped: 0 }));
    });
  });
  new WebSocketServer({ server, perMessageDeflate: false }).on('connection', (ws) => ws.on('message', () => undefined));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  console.log(JSON.stringify({ ready: (server.address() as AddressInfo).port }));
}
