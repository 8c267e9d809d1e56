// A real take on the core, recorded as a user over its WebSocket (docs/websocket.md): seconds of
// tone, stopped by the user with nothing missing, so the core stores and composes its audio and
// publishes recording.finalized as for any take. The ML's batch pass must read that audio.
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { audioFrame, SAMPLE_RATE } from './audio';
import { waitFor, type CoreAccess } from './core';

export interface StoredTake {
  meetingId: string;
  audioVersion: number;
  transcriptionId: string;
}

type Message = Record<string, unknown>;

export async function recordTake(
  core: CoreAccess,
  user: string,
  meetingId: string,
  frames: number,
  timeoutMs: number,
): Promise<StoredTake> {
  const ws = new WebSocket(`${core.url.replace(/^http/, 'ws')}/ws`, { handshakeTimeout: timeoutMs });
  const received: Message[] = [];
  ws.on('message', (data, isBinary) => void (isBinary || received.push(JSON.parse(String(data)) as Message)));
  /** The answer of `type` to the command `ref`, or its error. */
  const next = async (type: string, ref: string) => {
    const m = await waitFor(
      async () => received.find((x) => x.type === type || (x.type === 'error' && x.ref === ref)),
      timeoutMs,
    );
    if (!m) {
      const got = received.map((x) => (x.type === 'error' ? `error ${x.code} (${x.ref})` : x.type));
      throw new Error(`no ${type} within ${timeoutMs / 1000} s; the core sent: ${got.join(', ') || 'nothing'}`);
    }
    if (m.type === 'error') throw new Error(`${ref}: ${m.code} ${m.message}`);
    return m;
  };
  const send = (m: Message) => ws.send(JSON.stringify(m));
  try {
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    send({ type: 'hello', token: user, client_id: randomUUID() });
    await next('ready', 'hello');
    send({ type: 'StartRecordingCommand', meeting_id: meetingId, encoding: 'pcm_s16le', sample_rate: SAMPLE_RATE });
    const started = await next('RecordingStarted', 'StartRecordingCommand');
    for (let seq = 0; seq < frames; seq++) ws.send(audioFrame(seq));
    send({ type: 'StopRecordingCommand', meeting_id: meetingId });
    const stopped = await next('RecordingStopped', 'StopRecordingCommand');
    if ((stopped.missing_ranges as unknown[]).length) {
      throw new Error(`the core stored the take with gaps: ${JSON.stringify(stopped.missing_ranges)}`);
    }
    return {
      meetingId,
      audioVersion: started.audio_version as number,
      transcriptionId: started.transcription_id as string,
    };
  } finally {
    ws.close();
  }
}
