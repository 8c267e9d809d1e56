// The conformance run: plays the core's side of the ML contract against the service under test
// (session start, frames with a gap, a resume, the drain, a finalized take on Pub/Sub) and checks
// every answer, socket message and callback to the real core. Returns one row per check.
import { randomUUID } from 'node:crypto';
import { createBus } from '@mi/lib/adapters/bus';
import {
  mlBatchSubscription,
  type RecordingFinalized,
  type StreamingSession,
  type StreamingStart,
} from '@mi/lib/ml/contract';
import { newTraceparent } from '@mi/client';
import { openAudioSocket, SAMPLE_RATE, type AudioSocket } from './audio';
import { callCore, createMeeting, kitUser, prepareTake, signedReads, waitFor, type CoreAccess } from './core';
import { recordTake, type StoredTake } from './take';
import { validDrainReport, validFinalized, validMlMessage, validSession } from './validators';

export interface ConformanceOptions {
  mlUrl: string;
  core: CoreAccess;
  pubsub: { projectId: string; emulatorHost?: string; topic: string };
  /** How long to wait for each outcome of the ML (a callback, the batch pass). */
  timeoutMs: number;
  /** How long the core may take to finalize a stopped take (default 35 s: the local stack sweeps every 30 s). */
  finalizeMs?: number;
}

export interface Check {
  name: string;
  pass: boolean;
  reason: string;
}

// The take: frames 0–29, a gap (30–39 never sent), 40–59; then the take resumes at 60 on a new
// session (as when it moves to another live instance) and ends at 99.
const FIRST = [...range(0, 29), ...range(40, 59)];
const RESUME_AT = 60;
const RESUMED = range(RESUME_AT, 99);

/** The stored take: 5 s of tone. */
const TAKE_FRAMES = 50;
/** How long a redelivered message may take to show a second pass. */
const REDELIVERY_QUIET_MS = 5_000;

function range(from: number, to: number) {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Thrown by a check whose failure makes the checks after it meaningless. */
class Stop extends Error {}

export async function runConformance(opts: ConformanceOptions): Promise<Check[]> {
  const checks: Check[] = [];
  const token = opts.core.serviceToken;
  const ml = opts.mlUrl.replace(/\/$/, '');
  const trace = { traceparent: newTraceparent() };
  const sockets: AudioSocket[] = [];

  const check = async (name: string, run: () => Promise<string>, stop = false) => {
    try {
      checks.push({ name, pass: true, reason: await run() });
    } catch (err) {
      checks.push({ name, pass: false, reason: (err as Error).message });
      if (stop) throw new Stop();
    }
  };
  const callMl = async (method: string, path: string, body?: unknown, auth = true) => {
    const headers: Record<string, string> = { ...trace, ...(auth ? { authorization: `Bearer ${token}` } : {}) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const signal = AbortSignal.timeout(opts.timeoutMs);
    const res = await fetch(`${ml}${path}`, { method, headers, body: payload, signal });
    const text = await res.text();
    let json: unknown = text;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      // kept as text: the validators say what is wrong with it
    }
    return { status: res.status, body: json };
  };
  const startSession = async (start: StreamingStart): Promise<StreamingSession> => {
    const res = await callMl('POST', '/streaming', start);
    if (res.status !== 201) throw new Error(`answered ${res.status}: ${JSON.stringify(res.body)?.slice(0, 300)}`);
    const invalid = validSession(res.body);
    if (invalid) throw new Error(invalid);
    return res.body as StreamingSession;
  };
  const stream = async (session: StreamingSession, sequences: number[]) => {
    const socket = await openAudioSocket(session.audio_url, token, opts.timeoutMs);
    sockets.push(socket);
    await socket.send(sequences);
    return socket;
  };

  let take: { meetingId: string; transcriptionId: string };
  try {
    await check(
      'setup: a meeting and a transcription on the core',
      async () => {
        take = await prepareTake(opts.core);
        return `meeting ${take.meetingId}, transcription ${take.transcriptionId}`;
      },
      true,
    );
    const start: StreamingStart = {
      meeting_id: take!.meetingId,
      transcription_id: take!.transcriptionId,
      audio_version: 1,
      encoding: 'pcm_s16le',
      sample_rate: SAMPLE_RATE,
      start_sequence: 0,
    };

    await check('POST /streaming without a credential is refused (4xx)', async () => {
      const res = await callMl('POST', '/streaming', start, false);
      if (res.status < 400 || res.status >= 500) throw new Error(`answered ${res.status}`);
      return `${res.status}`;
    });

    let first: StreamingSession;
    await check(
      'POST /streaming answers 201 with a session (OpenAPI startStreaming)',
      async () => {
        first = await startSession(start);
        return `id ${first.id}`;
      },
      true,
    );
    await check(
      `the audio socket takes frames 0–29 and 40–59 (a gap)`,
      async () => {
        const socket = await stream(first!, FIRST);
        socket.close(); // the take moves to another instance: this session gets no DELETE
        return `${FIRST.length} frames`;
      },
      true,
    );

    let resumed: StreamingSession;
    await check(
      `POST /streaming with start_sequence ${RESUME_AT} resumes the take`,
      async () => {
        resumed = await startSession({ ...start, start_sequence: RESUME_AT });
        if (resumed.id === first!.id) throw new Error('answered the id of the previous session');
        return `id ${resumed.id}`;
      },
      true,
    );
    let resumedSocket: AudioSocket;
    await check(
      `the resumed session's socket takes frames ${RESUME_AT}–99`,
      async () => {
        resumedSocket = await stream(resumed!, RESUMED);
        return `${RESUMED.length} frames`;
      },
      true,
    );

    await check('DELETE /streaming/{id} drains: 200 with a drain report, or 204', async () => {
      const res = await callMl('DELETE', `/streaming/${encodeURIComponent(resumed!.id)}`);
      resumedSocket!.close();
      if (res.status === 204) return '204';
      if (res.status !== 200) throw new Error(`answered ${res.status}: ${JSON.stringify(res.body)?.slice(0, 300)}`);
      const invalid = validDrainReport(res.body);
      if (invalid) throw new Error(invalid);
      return `200 ${JSON.stringify(res.body)}`;
    });
    await check('DELETE /streaming/{id} of an unknown session answers 404', async () => {
      const res = await callMl('DELETE', `/streaming/${randomUUID()}`);
      if (res.status !== 404) throw new Error(`answered ${res.status}`);
      return '404';
    });
    await check('messages on the audio socket follow the AsyncAPI document (Warning, Dropped)', async () => {
      const received = sockets.flatMap((s) => s.received);
      const closed = sockets.map((s) => s.closedBy).filter(Boolean);
      if (closed.length) throw new Error(`the ML closed the socket while frames flowed: ${closed.join(', ')}`);
      for (const m of received) {
        if (m.binaryBytes !== undefined) {
          throw new Error(`a binary message (${m.binaryBytes} bytes): the ML sends text only`);
        }
        let json: unknown;
        try {
          json = JSON.parse(m.text!);
        } catch {
          throw new Error(`not JSON: ${m.text!.slice(0, 200)}`);
        }
        const invalid = validMlMessage(json);
        if (invalid) throw new Error(`${m.text!.slice(0, 200)}: ${invalid}`);
      }
      return `${received.length} message(s)`;
    });
    await check('live segments reach the core (POST /transcriptions/{id}/segments)', async () => {
      const path = `/transcriptions/${take!.transcriptionId}/segments?limit=200`;
      const items = await waitFor(async () => {
        const page = (await callCore(opts.core, 'GET', path)).body as { items?: unknown[] };
        return page.items?.length ? page.items : undefined;
      }, opts.timeoutMs);
      if (!items) throw new Error(`no segment within ${opts.timeoutMs / 1000} s`);
      return `${items.length} segment(s)`;
    });

    let stored: StoredTake;
    await check(
      `a real take stored on the core (${TAKE_FRAMES / 10} s recorded over its WebSocket, then stopped)`,
      async () => {
        const meetingId = await createMeeting(opts.core, 'ML conformance stored take');
        const user = await kitUser(opts.core);
        stored = await recordTake(opts.core, user, meetingId, TAKE_FRAMES, Math.max(opts.timeoutMs, 10_000));
        return `meeting ${stored.meetingId}, audio_version ${stored.audioVersion}`;
      },
      true,
    );
    await check(
      'the core finalized the stored take (and published recording.finalized)',
      async () => {
        // The sweep finalizes a stopped take: up to its interval after the stop.
        const takes = `/meetings/${stored!.meetingId}/recording/takes`;
        const user = await kitUser(opts.core);
        const finalized = await waitFor(async () => {
          const page = (await callCore(opts.core, 'GET', takes, user)).body as { items: Record<string, unknown>[] };
          return page.items.find((t) => t.audio_version === stored!.audioVersion && t.state === 'finalized');
        }, opts.finalizeMs ?? 35_000);
        if (!finalized) throw new Error(`the take was not finalized within ${(opts.finalizeMs ?? 35_000) / 1000} s`);
        return `finalized at ${finalized.finalized_at}`;
      },
      true,
    );
    await check('recording.finalized: the ML claims the stored take and completes it', async () => {
      const path = `/transcriptions/${stored!.transcriptionId}`;
      let last: Record<string, unknown> = {};
      const done = await waitFor(async () => {
        last = (await callCore(opts.core, 'GET', path)).body as Record<string, unknown>;
        return last.status === 'completed' || last.status === 'failed' ? last : undefined;
      }, opts.timeoutMs);
      if (done?.status !== 'completed') throw new Error(`transcription ${last.status}: ${last.status_message ?? ''}`);
      return `completed: ${last.status_message ?? ''}`;
    });
    let audioObject: string | undefined;
    await check("the ML read the take's audio through the signed URL of GET /meetings/{id}/audio-url", async () => {
      audioObject = (await signedReads(opts.core)).find((r) => r.object.includes(stored!.meetingId))?.object;
      if (!audioObject) throw new Error("the take's audio object was never read through a signed URL");
      return audioObject;
    });
    await check('the batch pass wrote the synthesis and the headline', async () => {
      const reply = await callCore(opts.core, 'GET', `/meetings/${stored!.meetingId}`);
      const meeting = reply.body as Record<string, string | null>;
      if (!meeting.summary) throw new Error('the meeting has no summary (PUT /meetings/{id}/synthesis)');
      if (!meeting.headline) throw new Error('the meeting has no headline (PATCH /meetings/{id})');
      return `headline "${meeting.headline.slice(0, 60)}"`;
    });
    await check('a redelivered recording.finalized: the claim answers 409 and the ML changes nothing', async () => {
      const before = await batchState(opts.core, stored!);
      await publishFinalized(
        opts,
        {
          meeting_id: stored!.meetingId,
          audio_version: stored!.audioVersion,
          transcription_id: stored!.transcriptionId,
          storage_path: audioObject ?? null,
          is_degraded: false,
          missing_ranges: [],
          attempt: 1,
        },
        trace,
      );
      // A conformant ML leaves no trace (its claim is refused); any write within the window fails the check.
      const quietMs = Math.min(opts.timeoutMs, REDELIVERY_QUIET_MS);
      const after = await waitFor(async () => {
        const now = await batchState(opts.core, stored!);
        return now === before ? undefined : now;
      }, quietMs);
      if (after) throw new Error(`a second pass ran: before ${before}, after ${after}`.slice(0, 600));
      return `nothing changed within ${quietMs / 1000} s`;
    });
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
  } finally {
    for (const s of sockets) s.close();
  }
  return checks;
}

/** What a batch pass writes, as one comparable string: status and history, segment ids, synthesis. */
async function batchState(core: CoreAccess, take: StoredTake): Promise<string> {
  const t = `/transcriptions/${take.transcriptionId}`;
  const [transcription, history, segments, meeting] = await Promise.all(
    [t, `${t}/status-history`, `${t}/segments?limit=200`, `/meetings/${take.meetingId}`].map(
      async (path) => (await callCore(core, 'GET', path)).body as Record<string, unknown>,
    ),
  );
  const ids = (page: Record<string, unknown>) => ((page.items ?? []) as { id: string }[]).map((i) => i.id);
  return JSON.stringify({
    status: transcription.status,
    history: ids(history).length,
    segments: ids(segments),
    summary: meeting.summary,
    headline: meeting.headline,
  });
}

async function publishFinalized(opts: ConformanceOptions, message: RecordingFinalized, trace: Record<string, string>) {
  const invalid = validFinalized(message);
  if (invalid) throw new Error(`the kit's own recording.finalized is invalid: ${invalid}`);
  const { topic, projectId, emulatorHost } = opts.pubsub;
  const bus = createBus({ projectId, emulatorHost });
  try {
    await bus.ensureTopic(topic);
    // As Terraform and the local stack create it: nothing is lost while the ML is not pulling yet.
    await bus.ensureQueue(topic, mlBatchSubscription(topic));
    const attributes = { meeting_id: message.meeting_id, audio_version: String(message.audio_version), ...trace };
    await bus.publish(topic, message, attributes);
  } finally {
    await bus.close();
  }
}
