// The core's side of the audio socket: frames as the core sends them (8 bytes big-endian sequence,
// then 100 ms of 16 kHz pcm_s16le, a tone so that an ML hears something), and every message the ML
// sends back, kept for checking against the AsyncAPI document.
import WebSocket from 'ws';
import { FRAME_HEADER_BYTES } from '@mi/lib/ml/contract';

export const SAMPLE_RATE = 16_000;
const SAMPLES_PER_FRAME = SAMPLE_RATE / 10;
/** Frames per send, like the core's forwarding batches. */
const BATCH = 10;

export function audioFrame(seq: number): Buffer {
  const buf = Buffer.alloc(FRAME_HEADER_BYTES + SAMPLES_PER_FRAME * 2);
  buf.writeBigUInt64BE(BigInt(seq), 0);
  const hz = 220 + (seq % 20) * 10;
  for (let i = 0; i < SAMPLES_PER_FRAME; i++) {
    const t = (seq * SAMPLES_PER_FRAME + i) / SAMPLE_RATE;
    buf.writeInt16LE(Math.round(8000 * Math.sin(2 * Math.PI * hz * t)), FRAME_HEADER_BYTES + i * 2);
  }
  return buf;
}

export interface AudioSocket {
  /** Text messages as received, and a note per binary message (the ML must send none). */
  received: { text?: string; binaryBytes?: number }[];
  /** Set when the ML closed the socket: code and reason. */
  closedBy: string | null;
  send(sequences: number[]): Promise<void>;
  close(): void;
}

export function openAudioSocket(url: string, token: string, timeoutMs: number): Promise<AudioSocket> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}` };
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: timeoutMs });
    let closing = false;
    const socket: AudioSocket = {
      received: [],
      closedBy: null,
      async send(sequences) {
        for (let i = 0; i < sequences.length; i += BATCH) {
          if (ws.readyState !== WebSocket.OPEN) {
            throw new Error(`the socket closed: ${socket.closedBy ?? 'by the kit'}`);
          }
          const batch = sequences.slice(i, i + BATCH);
          const sent = (seq: number) => new Promise<void>((r, j) => ws.send(audioFrame(seq), (e) => (e ? j(e) : r())));
          await Promise.all(batch.map(sent));
          await new Promise((r) => setTimeout(r, 100)); // real time: 10 frames of 100 ms
        }
      },
      close() {
        closing = true;
        ws.close(1000, 'take moved');
      },
    };
    ws.on('message', (data, isBinary) => {
      const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
      socket.received.push(isBinary ? { binaryBytes: bytes.length } : { text: bytes.toString('utf8') });
    });
    ws.on('close', (code, reason) => {
      if (!closing) socket.closedBy = `${code} ${reason.toString()}`.trim();
    });
    ws.once('open', () => resolve(socket));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`the upgrade answered ${res.statusCode}`)));
    ws.on('error', (err) => reject(err));
  });
}

/**
 * An upgrade of `url` with the `Authorization` header given (none when null): the status the ML
 * refused it with, or 'opened' (then closed at once).
 */
export function probeUpgrade(url: string, authorization: string | null, timeoutMs: number): Promise<number | 'opened'> {
  return new Promise((resolve, reject) => {
    const headers = authorization === null ? {} : { authorization };
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, handshakeTimeout: timeoutMs });
    ws.once('open', () => {
      ws.once('close', () => resolve('opened'));
      ws.close(1000, 'probe');
    });
    ws.once('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    ws.on('error', (err) => reject(err));
  });
}
