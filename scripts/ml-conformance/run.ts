// The conformance run: plays the core's side of the ML contract against the service under test
// (session start, frames with a gap, a resume repeating frames, the drain, the credential on every
// entry, a finalized take on Pub/Sub) and checks every answer, socket message and callback to the
// real core, within the core's own bounds. Returns one row per check.
import { randomUUID } from 'node:crypto';
import { createBus } from '@mi/lib/adapters/bus';
import {
  mlBatchSubscription,
  type RecordingFinalized,
  type StreamingSession,
  type StreamingStart,
} from '@mi/lib/ml/contract';
import { newTraceparent } from '@mi/client';
import { openAudioSocket, probeUpgrade, SAMPLE_RATE, type AudioSocket } from './audio';
import { callCore, createMeeting, kitUser, prepareTake, signedReads, waitFor, type CoreAccess } from './core';
import { recordTake, type StoredTake } from './take';
import { backwardsTimes, duplicates, sameSpeakerOverlaps, type LiveSegment } from './segments';
import { validDrainReport, validFinalized, validMlMessage, validSession } from './validators';
import { describeReply, type Witness } from './witness';

export interface ConformanceOptions {
  mlUrl: string;
  core: CoreAccess;
  pubsub: { projectId: string; emulatorHost?: string; topic: string };
  /** How long to wait for each outcome of the ML (a callback, the batch pass). */
  timeoutMs: number;
  /** How long the core may take to finalize a stopped take (default 35 s: the local stack sweeps every 30 s). */
  finalizeMs?: number;
  /** The core's bound on POST /streaming (RECORDING_ML_START_TIMEOUT_SECONDS; default 10 s). */
  startTimeoutMs?: number;
  /** The core's bound on the drain (RECORDING_ML_DRAIN_TIMEOUT_SECONDS; default 5 s). */
  drainTimeoutMs?: number;
  /** How long the kit watches for writes that must not come (after the drain, after a redelivery; default 5 s). */
  quietMs?: number;
  /** Only the live path (the streaming contract) or only the batch path (recording.finalized). */
  only?: 'live' | 'batch';
  /** The core as the ML reaches it through the kit (./witness.ts): failing rows quote the core's refusals. */
  witness?: Witness;
}

export interface Check {
  name: string;
  pass: boolean;
  reason: string;
}

// The take: frames 0–29, a gap (30–39 never sent), 40–59; then the take resumes on a new session
// (as when it moves to another live instance) at 50, repeating 50–59 as a resume may, and ends at 99.
const FIRST = [...range(0, 29), ...range(40, 59)];
const RESUME_AT = 50;
const RESUMED = range(RESUME_AT, 99);
/** Segments ending after the first session's last frame come from the resumed (drained) session only. */
const DRAINED_ONLY_AFTER_MS = 6_000;

/** The stored take: 5 s of tone. */
const TAKE_FRAMES = 50;
const WRONG_TOKEN = 'Bearer not-the-service-token';

function range(from: number, to: number) {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

const seconds = (ms: number) => `${ms / 1000} s`;
const refused = (status: number) => status === 401 || status === 403;

/** Thrown by a check whose failure makes the checks after it meaningless. */
class Stop extends Error {}

interface MlReply {
  status: number;
  body: unknown;
  contentType: string | null;
  ms: number;
}

export async function runConformance(opts: ConformanceOptions): Promise<Check[]> {
  const checks: Check[] = [];
  const token = opts.core.serviceToken;
  const ml = opts.mlUrl.replace(/\/$/, '');
  const trace = { traceparent: newTraceparent() };
  const sockets: AudioSocket[] = [];
  const startMs = opts.startTimeoutMs ?? 10_000;
  const drainMs = opts.drainTimeoutMs ?? 5_000;
  const quietMs = opts.quietMs ?? 5_000;

  const check = async (name: string, run: () => Promise<string>, stop = false) => {
    try {
      checks.push({ name, pass: true, reason: await run() });
    } catch (err) {
      checks.push({ name, pass: false, reason: (err as Error).message });
      if (stop) throw new Stop();
    }
  };
  /** What the core refused the ML on the paths naming `ids`, for a failing row. */
  const coreAnswers = (...ids: string[]) => {
    if (!opts.witness)
      return " (run the kit with --witness-port and your service calling the core there to see the core's answers)";
    const lines = new Set(
      opts.witness
        .calls()
        .filter((c) => c.status >= 400 && ids.some((id) => c.path.includes(id)))
        .map((c) => `${c.method} ${c.path.split('?')[0]} → ${c.status} ${c.problem ?? ''}`.trim()),
    );
    return lines.size ? `; the core answered your service: ${[...lines].slice(0, 3).join('; ')}` : '';
  };
  const callMl = async (
    method: string,
    path: string,
    body: unknown,
    { auth = `Bearer ${token}`, timeoutMs = opts.timeoutMs }: { auth?: string | null; timeoutMs?: number } = {},
  ): Promise<MlReply> => {
    const headers: Record<string, string> = { ...trace, ...(auth === null ? {} : { authorization: auth }) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const began = performance.now();
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${ml}${path}`, { method, headers, body: payload, signal: AbortSignal.timeout(timeoutMs) });
      text = await res.text();
    } catch (err) {
      if ((err as Error).name !== 'TimeoutError') throw err;
      throw new Error(`${method} ${path.split('?')[0]}: no answer within ${seconds(timeoutMs)}`);
    }
    let json: unknown = text;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      // kept as text: the validators say what is wrong with it
    }
    const ms = Math.round(performance.now() - began);
    return { status: res.status, body: json, contentType: res.headers.get('content-type'), ms };
  };
  const startReply = (start: StreamingStart) =>
    callMl('POST', '/streaming', start, { timeoutMs: startMs }).catch((err: Error) => {
      throw new Error(
        `${err.message}: the core waits RECORDING_ML_START_TIMEOUT_SECONDS (${seconds(startMs)}), then drops ` +
          'the attempt, tells the user ml_unavailable and retries later',
      );
    });
  const sessionOf = (res: MlReply): StreamingSession => {
    if (refused(res.status)) {
      throw new Error(
        `answered ${describeReply(res.status, res.body)}: the core's own credential was refused ` +
          '(it sends Authorization: Bearer <SERVICE_AUTH_TOKEN>)',
      );
    }
    if (res.status !== 201) throw new Error(`answered ${describeReply(res.status, res.body)}`);
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
  /** The live segments of `transcriptionId`: as the ML posted them (witness), else as stored. */
  const liveSegments = async (transcriptionId: string): Promise<LiveSegment[]> => {
    if (opts.witness) {
      const path = `/transcriptions/${transcriptionId}/segments`;
      const byId = new Map<string, LiveSegment>();
      for (const c of opts.witness.calls()) {
        if (c.method !== 'POST' || c.path.split('?')[0] !== path) continue;
        const posted = ((c.body as { segments?: unknown[] })?.segments ?? []) as (LiveSegment & {
          is_final?: boolean;
        })[];
        for (const s of posted) if (s.is_final !== false && !byId.has(s.id)) byId.set(s.id, s);
      }
      return [...byId.values()];
    }
    const page = await callCore(opts.core, 'GET', `/transcriptions/${transcriptionId}/segments?limit=200`);
    return ((page.body as { items?: LiveSegment[] }).items ?? []) as LiveSegment[];
  };
  const segmentSource = opts.witness ? 'posted' : 'stored';

  try {
    if (opts.only !== 'batch') await live();
    if (opts.only !== 'live') await batch();
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
  } finally {
    for (const s of sockets) s.close();
  }
  return checks;

  async function live() {
    let take: { meetingId: string; transcriptionId: string };
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

    await check('POST /streaming without a credential is refused (401/403)', async () => {
      const res = await callMl('POST', '/streaming', start, { auth: null });
      if (!refused(res.status)) throw new Error(`answered ${res.status}: anyone can start a session`);
      return `${res.status}`;
    });
    await check('POST /streaming with a wrong bearer token is refused (401/403)', async () => {
      const res = await callMl('POST', '/streaming', start, { auth: WRONG_TOKEN });
      if (!refused(res.status)) throw new Error(`answered ${res.status}: any Bearer token starts a session`);
      return `${res.status}`;
    });

    let reply: MlReply;
    await check(
      `POST /streaming answers within the core's bound (RECORDING_ML_START_TIMEOUT_SECONDS, ${seconds(startMs)})`,
      async () => {
        reply = await startReply(start);
        return `${reply.ms} ms`;
      },
      true,
    );
    let first: StreamingSession;
    await check(
      'POST /streaming answers 201 with a session (OpenAPI startStreaming)',
      async () => {
        first = sessionOf(reply!);
        return `id ${first.id}`;
      },
      true,
    );
    await check("POST /streaming's 201 is application/json", async () => {
      const type = reply!.contentType ?? '(none)';
      if (!/^application\/json\s*(;|$)/i.test(type))
        throw new Error(`Content-Type ${type}: the core reads only application/json`);
      return type;
    });
    await check(
      'the audio socket takes frames 0–29 and 40–59 (a gap)',
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
        resumed = sessionOf(await startReply({ ...start, start_sequence: RESUME_AT }));
        if (resumed.id === first!.id) throw new Error('answered the id of the previous session');
        return `id ${resumed.id}`;
      },
      true,
    );
    let resumedSocket: AudioSocket;
    await check(
      `the resumed session's socket takes frames ${RESUME_AT}–99 (${RESUME_AT}–59 again, as a resume may repeat frames)`,
      async () => {
        resumedSocket = await stream(resumed!, RESUMED);
        return `${RESUMED.length} frames`;
      },
      true,
    );

    // One DELETE, as the core sends it: bounded by the core's drain bound, then judged.
    const tid = take!.transcriptionId;
    const drainPath = `/streaming/${encodeURIComponent(resumed!.id)}?last_sequence=${RESUMED.at(-1)}`;
    const drain: MlReply | Error = await callMl('DELETE', drainPath, undefined, { timeoutMs: drainMs }).catch(
      (err: Error) => err,
    );
    resumedSocket!.close();
    // What reached the core by the answer: anything of the drained session after it is late.
    const atDrain = new Set((await liveSegments(tid)).map((s) => s.id));
    await check(
      `DELETE /streaming/{id} answers within the core's bound (RECORDING_ML_DRAIN_TIMEOUT_SECONDS, ${seconds(drainMs)})`,
      async () => {
        if (drain instanceof Error) {
          throw new Error(`${drain.message}: the core closes the socket then, and what you post later is late`);
        }
        return `${drain.ms} ms`;
      },
    );
    await check('DELETE /streaming/{id} drains: 200 with a drain report, or 204', async () => {
      if (drain instanceof Error) throw new Error('no answer within the bound');
      if (drain.status === 204) return '204';
      if (drain.status !== 200) throw new Error(`answered ${describeReply(drain.status, drain.body)}`);
      const invalid = validDrainReport(drain.body);
      if (invalid) throw new Error(invalid);
      return `200 ${JSON.stringify(drain.body)}`;
    });
    await check(
      `no live segment of the drained session arrives after its drain answered (${seconds(quietMs)} watched)`,
      async () => {
        const late = await waitFor(
          async () => {
            const after = (await liveSegments(tid)).filter(
              (s) => !atDrain.has(s.id) && s.end_ms > DRAINED_ONLY_AFTER_MS,
            );
            return after.length ? after : undefined;
          },
          drain instanceof Error ? 0 : quietMs,
        );
        if (drain instanceof Error) return 'not watched: the drain did not answer';
        if (late) {
          const which = late.map((s) => `${s.start_ms}–${s.end_ms} ms`).join(', ');
          throw new Error(
            `${late.length} segment(s) ${segmentSource} after the drain answered (${which}): finish before you answer`,
          );
        }
        return `none within ${seconds(quietMs)}`;
      },
    );
    await check('DELETE /streaming/{id} of an unknown session answers 404', async () => {
      const res = await callMl('DELETE', `/streaming/${randomUUID()}`, undefined);
      if (res.status !== 404) throw new Error(`answered ${res.status}`);
      return '404';
    });

    // The credential on the socket and the drain, probed on a session of their own.
    const probe: StreamingSession | Error = await startReply({ ...start, start_sequence: 100 })
      .then(sessionOf)
      .catch((err: Error) => err);
    await check(
      'the audio socket refuses an upgrade without a credential or with a wrong bearer (401/403)',
      async () => {
        if (probe instanceof Error) throw new Error(`no session to probe: ${probe.message}`);
        const answers = [];
        for (const auth of [null, WRONG_TOKEN]) {
          const status = await probeUpgrade(probe.audio_url, auth, opts.timeoutMs);
          const how = auth === null ? 'without a credential' : 'with a wrong bearer';
          if (status === 'opened' || !refused(status))
            throw new Error(`the upgrade ${how} ${status === 'opened' ? 'was accepted' : `answered ${status}`}`);
          answers.push(status);
        }
        return answers.join(', ');
      },
    );
    await check('DELETE /streaming/{id} without a credential or with a wrong bearer is refused (401/403)', async () => {
      if (probe instanceof Error) throw new Error(`no session to probe: ${probe.message}`);
      const answers = [];
      for (const auth of [null, WRONG_TOKEN]) {
        const res = await callMl('DELETE', `/streaming/${encodeURIComponent(probe.id)}?last_sequence=99`, undefined, {
          auth,
          timeoutMs: drainMs,
        });
        const how = auth === null ? 'without a credential' : 'with a wrong bearer';
        if (!refused(res.status))
          throw new Error(`DELETE ${how} answered ${res.status}: anyone can end a take's session`);
        answers.push(res.status);
      }
      return answers.join(', ');
    });
    if (!(probe instanceof Error)) {
      await callMl('DELETE', `/streaming/${encodeURIComponent(probe.id)}?last_sequence=99`, undefined, {
        timeoutMs: drainMs,
      }).catch(() => undefined);
    }

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
      const path = `/transcriptions/${tid}/segments?limit=200`;
      const items = await waitFor(async () => {
        const page = (await callCore(opts.core, 'GET', path)).body as { items?: unknown[] };
        return page.items?.length ? page.items : undefined;
      }, opts.timeoutMs);
      if (!items) throw new Error(`no segment stored within ${seconds(opts.timeoutMs)}${coreAnswers(tid)}`);
      return `${items.length} segment(s)`;
    });
    const segments = await liveSegments(tid);
    const segmentCheck = (name: string, rule: (s: LiveSegment[]) => string | null) =>
      check(name, async () => {
        if (!segments.length) throw new Error(`no live segment ${segmentSource} to check${coreAnswers(tid)}`);
        const broken = rule(segments);
        if (broken) throw new Error(`${broken}${coreAnswers(tid)}`);
        return `${segments.length} segment(s) ${segmentSource}`;
      });
    await segmentCheck("live segments' times run forwards (0 <= start_ms <= end_ms)", backwardsTimes);
    await segmentCheck('no live segment is posted twice under fresh ids (the frames a resume repeats)', duplicates);
    await segmentCheck("no live segment overlaps the same speaker's previous segment", sameSpeakerOverlaps);
  }

  async function batch() {
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
        if (!finalized) throw new Error(`the take was not finalized within ${seconds(opts.finalizeMs ?? 35_000)}`);
        return `finalized at ${finalized.finalized_at}`;
      },
      true,
    );
    const path = `/transcriptions/${stored!.transcriptionId}`;
    const ids = [stored!.transcriptionId, stored!.meetingId];
    const read = async () => (await callCore(opts.core, 'GET', path)).body as Record<string, unknown>;
    let claimed: Record<string, unknown> | undefined;
    await check('recording.finalized: the ML claims the stored take (PATCH → synthesizing)', async () => {
      claimed = await waitFor(async () => {
        const t = await read();
        return t.status === 'transcribing' ? undefined : t;
      }, opts.timeoutMs);
      if (!claimed) throw new Error(`still transcribing after ${seconds(opts.timeoutMs)}${coreAnswers(...ids)}`);
      return `${claimed.status}`;
    });
    await check('the claimed batch pass completes the take (or renews its claim: the claim is a lease)', async () => {
      if (!claimed) throw new Error('never claimed');
      let last: Record<string, unknown> = claimed;
      const done = await waitFor(async () => {
        last = await read();
        return last.status === 'completed' || last.status === 'failed' ? last : undefined;
      }, opts.timeoutMs);
      if (done?.status === 'failed')
        throw new Error(`transcription failed: ${last.status_message ?? ''}${coreAnswers(...ids)}`);
      if (!done) {
        const lease = claimed.claim_expires_at;
        const renewed = lease !== undefined && last.claim_expires_at !== lease;
        const what = renewed
          ? 'renewed its claim but did not complete'
          : 'claimed the take and neither completed nor renewed its claim';
        throw new Error(
          `${what} within ${seconds(opts.timeoutMs)} (status ${last.status}: ${last.status_message ?? ''}): a pass that ` +
            'dies after its claim holds the take until the lease expires (ML_BATCH_CLAIM_LEASE_SECONDS)' +
            coreAnswers(...ids),
        );
      }
      return `completed: ${last.status_message ?? ''}`;
    });
    let audioObject: string | undefined;
    await check("the ML read the take's audio through the signed URL of GET /meetings/{id}/audio-url", async () => {
      audioObject = (await signedReads(opts.core)).find((r) => r.object.includes(stored!.meetingId))?.object;
      if (!audioObject)
        throw new Error(`the take's audio object was never read through a signed URL${coreAnswers(stored!.meetingId)}`);
      return audioObject;
    });
    await check('the batch pass wrote the synthesis and the headline', async () => {
      const reply = await callCore(opts.core, 'GET', `/meetings/${stored!.meetingId}`);
      const meeting = reply.body as Record<string, string | null>;
      if (!meeting.summary)
        throw new Error(`the meeting has no summary (PUT /meetings/{id}/synthesis)${coreAnswers(...ids)}`);
      if (!meeting.headline)
        throw new Error(`the meeting has no headline (PATCH /meetings/{id})${coreAnswers(...ids)}`);
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
      const after = await waitFor(async () => {
        const now = await batchState(opts.core, stored!);
        return now === before ? undefined : now;
      }, quietMs);
      if (after) throw new Error(`a second pass ran: before ${before}, after ${after}`.slice(0, 600));
      return `nothing changed within ${seconds(quietMs)}`;
    });
  }
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

async function publishFinalized(
  opts: ConformanceOptions,
  // `attempt`: which offer of the take this is (section 8); a redelivery repeats the first.
  message: RecordingFinalized & { attempt?: number },
  trace: Record<string, string>,
) {
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
