// MlStream's forwarding over real sockets: a take's frames go out together every
// forwardEveryMs, corked into one write, each still its own WebSocket message in order; a drain
// sends what waits before it asks the ML service to finish.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { sleep } from '@mi/lib/async';
import { createLogger } from '@mi/lib/telemetry/log';
import { MlStream } from '@mi/live/ml-client';

interface Stand {
  url: string;
  /** The sequences received, in order, one per WebSocket message. */
  seqs: number[];
  /** TCP reads on the audio socket that carried frames. */
  reads: number;
  /** seqs.length when DELETE (drain) arrived. */
  atDrain: number | null;
  server: Server;
}

/** The ML service's streaming protocol, as small as it gets: POST a session, audio over ws, DELETE to drain. */
async function standIn(): Promise<Stand> {
  const stand: Stand = { url: '', seqs: [], reads: 0, atDrain: null, server: createServer() };
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  stand.server.on('request', (req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') {
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id: 's1', audio_url: `${stand.url.replace('http', 'ws')}/streaming/s1/audio` }));
      } else {
        stand.atDrain = stand.seqs.length;
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ drained: true, processed: stand.seqs.length, dropped: 0 }));
      }
    });
  });
  stand.server.on('upgrade', (req, socket: Socket, head) => {
    socket.on('data', () => stand.reads++);
    wss.handleUpgrade(req, socket, head, (ws) =>
      ws.on('message', (data: Buffer) => stand.seqs.push(Number(data.readBigUInt64BE(0)))),
    );
  });
  await new Promise<void>((r) => stand.server.listen(0, '127.0.0.1', r));
  stand.url = `http://127.0.0.1:${(stand.server.address() as AddressInfo).port}`;
  return stand;
}

const frame = (seq: number) => {
  const m = Buffer.alloc(8 + 3200);
  m.writeBigUInt64BE(BigInt(seq));
  return m;
};

let stand: Stand | null = null;
let stream: MlStream | null = null;
afterEach(async () => {
  stream?.close();
  stand?.server.closeAllConnections();
  await new Promise((r) => stand?.server.close(r));
});

function open(forwardEveryMs: number): MlStream {
  const init = {
    meeting_id: 'm',
    transcription_id: 't',
    audio_version: 1,
    encoding: 'pcm_s16le' as const,
    sample_rate: 16000,
    start_sequence: 0,
  };
  return new MlStream({
    baseUrl: stand!.url,
    authorization: async () => 'Bearer x',
    startTimeoutMs: 10_000,
    init,
    log: createLogger({ level: 'error', name: 'test' }),
    trace: {},
    forwardEveryMs,
    onHealth: () => undefined,
  });
}

/** Waits until the audio socket is open (frames sent before then are queued and go out in one burst). */
async function sessionUp(s: MlStream): Promise<void> {
  await expect.poll(() => (s as unknown as { open: boolean }).open, { timeout: 20_000 }).toBe(true);
}

async function sendAtRealTime(s: MlStream, frames: number): Promise<void> {
  for (let seq = 0; seq < frames; seq++) {
    s.send(frame(seq), seq);
    await sleep(20); // paces the sender at a live take's rate
  }
}

describe('ML forwarding', () => {
  it("should send a take's frames together each interval, in order and each its own message", async () => {
    stand = await standIn();
    stream = open(250);
    await sessionUp(stream);
    await sendAtRealTime(stream, 40);
    await expect.poll(() => stand!.seqs.length, { timeout: 5000 }).toBe(40);
    expect(stand.seqs).toEqual([...Array(40).keys()]);
    // ~0.8 s of frames every 20 ms in 250 ms batches: a handful of writes, not 40.
    expect(stand.reads).toBeLessThanOrEqual(10);
  });

  it('should write each frame at once with forwardEveryMs 0', async () => {
    stand = await standIn();
    stream = open(0);
    await sessionUp(stream);
    await sendAtRealTime(stream, 20);
    await expect.poll(() => stand!.seqs.length, { timeout: 5000 }).toBe(20);
    expect(stand.reads).toBeGreaterThanOrEqual(15);
  });

  it('should send the frames still waiting before the drain request', async () => {
    stand = await standIn();
    stream = open(2000);
    await sessionUp(stream);
    for (let seq = 0; seq < 7; seq++) stream.send(frame(seq), seq);
    const drained = await stream.drain(3000);
    expect(drained).toMatchObject({ drained: true });
    expect(stand.atDrain).toBe(7);
    expect(stand.seqs).toEqual([...Array(7).keys()]);
  });
});
