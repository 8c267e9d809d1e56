// The fake ML service's post-meeting batch pass, run on a `recording.finalized` message:
// claim the transcription (→ synthesizing), replace its segments with the final set, write the
// synthesis and the headline, re-extract the system tasks, and mark it completed. It reads the
// take's audio through the signed URL the core gives (its length goes into the summary); the
// final set is derived from the live segments, so tests can assert on it. An uploaded file (source
// `upload`) has none: its set is "heard" from its length, a phrase per 2 s. As a real worker
// should, it renews its claim (a lease) while it works and sends the claim with every write, so
// that once it lost the claim (a pause longer than the lease) its writes are refused, not applied.
import type { Logger } from '@mi/lib/telemetry/log';
import type { RecordingFinalized } from './protocol';
import { ok, type RestClient } from '@mi/client';
import { FRAME_MS, featureVector, phraseOf, speakerOf, stableUuid, taskText, WINDOW_FRAMES } from './content';
import type { MlLimits } from './session';

interface Segment {
  id: string;
  speaker_label: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
}

/** PUT /transcriptions/{id}/segments accepts at most this many. */
const MAX_SEGMENTS = 5000;
const SEGMENTS_PER_TOPIC = 10;
const PAGE = 200;

export type BatchOutcome = 'completed' | 'skipped' | 'failed';

export async function runBatchPass(
  core: RestClient,
  limits: Pick<MlLimits, 'ML_SEGMENT_FEATURE_MAX_PER_SPEAKER' | 'ML_TASK_CADENCE_SEGMENTS'>,
  msg: RecordingFinalized,
  log: Logger,
  pause?: (msg: RecordingFinalized) => Promise<void>,
): Promise<BatchOutcome> {
  const tid = msg.transcription_id;
  if (!tid) return 'skipped';
  // The claim: only one worker moves the transcription to synthesizing; a redelivered or
  // duplicate message finds it claimed (409) or gone (404) and stops here.
  const claimed = await core.PATCH('/transcriptions/{id}', {
    params: { path: { id: tid } },
    body: { status: 'synthesizing', status_message: 'batch pass started' },
  });
  const status = claimed.response.status;
  if (status === 409 || status === 404) {
    log.info({ transcription_id: tid, status, attempt: msg.attempt }, 'fake ML: batch pass skipped (claimed or gone)');
    return 'skipped';
  }
  const claim = ok(claimed); // any other failure throws: the message is redelivered
  // Every write of the pass carries the claim; the lease is renewed until the pass ends.
  const transcription = { params: { path: { id: tid } }, headers: { 'ml-claim': claim.claim_id! } };
  const lease = keepClaim(core, tid, claim.claim_id!, claim.claim_expires_at!, log);

  try {
    await pause?.(msg);
    const audioSeconds = await readAudio(core, msg);
    const live = msg.source === 'upload' ? heardSegments(audioSeconds ?? 0) : await allSegments(core, tid);
    const final = finalSegments(live, limits.ML_SEGMENT_FEATURE_MAX_PER_SPEAKER);
    ok(await core.PUT('/transcriptions/{id}/segments', { ...transcription, body: { segments: final } }));
    const stored = await allSegments(core, tid);

    const speakers = [...new Set(stored.map((s) => s.speaker_label ?? 'unknown'))].sort();
    const topics = [];
    for (let i = 0; i < stored.length; i += SEGMENTS_PER_TOPIC) {
      const part = stored.slice(i, i + SEGMENTS_PER_TOPIC);
      topics.push({
        name: `Part ${topics.length + 1}`,
        summary: part
          .map((s) => s.text)
          .join(' ')
          .slice(0, 5000),
        is_final: true,
        segment_ids: part.map((s) => s.id),
      });
    }
    const heard = audioSeconds === null ? '' : ` over ${audioSeconds.toFixed(1)} s of audio`;
    const missing = msg.is_degraded ? ' (some audio was missing)' : '';
    const summary = stored.length
      ? `A conversation between ${speakers.length} speaker(s) in ${stored.length} segments${heard}${missing}. ` +
        `It opened with: "${stored[0].text}"`
      : `No speech was detected${heard}.`;
    const keyPoints = topics.map((t) => t.summary.split('.')[0]).filter(Boolean);
    const meeting = { params: { path: { id: msg.meeting_id } }, headers: transcription.headers };
    ok(await core.PUT('/meetings/{id}/synthesis', { ...meeting, body: { summary, key_points: keyPoints, topics } }));
    const headline = stored.length ? stored[0].text.replace(/[.?!]$/, '') : 'Silent recording';
    ok(await core.PATCH('/meetings/{id}', { ...meeting, body: { headline } }));

    ok(
      await core.DELETE('/meetings/{id}/tasks', {
        params: { path: { id: msg.meeting_id }, query: { source: 'system' } },
        headers: transcription.headers,
      }),
    );
    const tasks = stored
      .filter((_, i) => (i + 1) % limits.ML_TASK_CADENCE_SEGMENTS === 0)
      .map((s) => ({ content: taskText(s.text) }));
    if (tasks.length) {
      const key = stableUuid(tid, 'batch-tasks', msg.audio_version);
      ok(
        await core.POST('/meetings/{id}/tasks', {
          params: { path: { id: msg.meeting_id }, header: { 'idempotency-key': key } },
          headers: transcription.headers,
          body: { tasks },
        }),
      );
    }
    ok(
      await core.PATCH('/transcriptions/{id}', {
        ...transcription,
        body: { status: 'completed', status_message: 'batch pass completed' },
      }),
    );
    return 'completed';
  } catch (err) {
    log.warn({ err: String(err), transcription_id: tid }, 'fake ML: batch pass failed');
    const failed = await core
      .PATCH('/transcriptions/{id}', {
        ...transcription,
        body: { status: 'failed', status_message: 'batch pass failed' },
      })
      .catch(() => null);
    // Refused with the claim: it was lost (expired and released), the take is another pass's now.
    if (lease.lost() || failed?.response.status === 409) {
      log.warn({ transcription_id: tid }, 'fake ML: batch pass stopped: its claim is no longer current');
      return 'skipped';
    }
    return 'failed';
  } finally {
    lease.stop();
  }
}

/**
 * Renews the claim when half of its lease is left, as long as the pass runs. A renewal refused
 * (409: the claim expired and was released) marks it lost; other failures are retried at the
 * next turn, while the lease still runs.
 */
function keepClaim(core: RestClient, tid: string, claimId: string, expiresAt: string, log: Logger) {
  let lost = false;
  let timer: NodeJS.Timeout | undefined;
  let until = expiresAt;
  const schedule = () => {
    timer = setTimeout(renew, Math.max(50, (Date.parse(until) - Date.now()) / 2));
  };
  const renew = async () => {
    const renewed = await core
      .PATCH('/transcriptions/{id}', {
        params: { path: { id: tid } },
        headers: { 'ml-claim': claimId },
        body: { status: 'synthesizing' },
      })
      .catch(() => null);
    if (timer === undefined) return; // the pass ended meanwhile
    if (renewed?.response.status === 409) {
      lost = true;
      log.warn({ transcription_id: tid }, 'fake ML: the batch claim was lost');
      return;
    }
    until = renewed?.data?.claim_expires_at ?? until;
    schedule();
  };
  schedule();
  return {
    lost: () => lost,
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** Bytes per second the stand-in assumes of an upload that is not a WAV (128 kbit/s, as an MP3). */
const COMPRESSED_BYTES_PER_SECOND = 16_000;
const WAV_TYPES = /^audio\/(wav|x-wav|wave|vnd\.wave)$/i;

/**
 * The audio as the contract gives it (docs/ml-integration.md, step 9): a signed URL from GET
 * /meetings/{id}/audio-url (with audio_version for a take, without for an upload), fetched with
 * no credential. Its length in seconds (a WAV of 16-bit samples at the header's byte rate; another
 * upload type by its size), or null when there is no audio (404). A WAV that is not one fails.
 */
async function readAudio(core: RestClient, msg: RecordingFinalized): Promise<number | null> {
  const upload = msg.source === 'upload';
  const query = upload ? {} : { audio_version: msg.audio_version };
  const links = await core.GET('/meetings/{id}/audio-url', { params: { path: { id: msg.meeting_id }, query } });
  if (links.response.status === 404) return null;
  const res = await fetch(ok(links).url);
  if (!res.ok) throw new Error(`the signed audio URL answered ${res.status}`);
  const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  const wav = !upload || WAV_TYPES.test(type);
  const bytes = Buffer.from(await res.arrayBuffer());
  if (!wav) return bytes.length / COMPRESSED_BYTES_PER_SECOND;
  if (bytes.length < 44 || bytes.toString('ascii', 0, 4) !== 'RIFF' || bytes.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error('the audio is not a WAV');
  const byteRate = bytes.readUInt32LE(28);
  if (byteRate === 0) throw new Error('the WAV header gives no byte rate');
  return (bytes.length - 44) / byteRate;
}

/** An upload's "transcript": one segment per 2 s window of its length, two speakers taking turns. */
export function heardSegments(seconds: number): Omit<Segment, 'id'>[] {
  const windowMs = WINDOW_FRAMES * FRAME_MS;
  const totalMs = Math.round(seconds * 1000);
  return Array.from({ length: Math.ceil(totalMs / windowMs) }, (_, w) => ({
    speaker_label: speakerOf(w),
    text: phraseOf(w),
    start_ms: w * windowMs,
    end_ms: Math.min((w + 1) * windowMs, totalMs),
  }));
}

async function allSegments(core: RestClient, tid: string): Promise<Segment[]> {
  const out: Segment[] = [];
  let cursor: string | null = null;
  do {
    const query: { limit: number; order: 'asc'; cursor?: string } = {
      limit: PAGE,
      order: 'asc',
      ...(cursor ? { cursor } : {}),
    };
    const page = ok(await core.GET('/transcriptions/{id}/segments', { params: { path: { id: tid }, query } }));
    out.push(...(page.items as Segment[]));
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

/**
 * The final set: the live segments merged in runs of k (so at most 5,000), with a feature
 * vector on the `maxPerSpeaker` longest segments of each speaker label.
 */
export function finalSegments(live: Omit<Segment, 'id'>[], maxPerSpeaker: number) {
  const k = Math.max(1, Math.ceil(live.length / MAX_SEGMENTS));
  const merged: Omit<Segment, 'id'>[] = [];
  for (let i = 0; i < live.length; i += k) {
    const run = live.slice(i, i + k);
    merged.push({
      speaker_label: run[0].speaker_label,
      text: run.map((s) => s.text).join(' '),
      start_ms: run[0].start_ms,
      end_ms: run[run.length - 1].end_ms,
    });
  }
  const withVector = new Set<number>();
  const byLabel = new Map<string, number[]>();
  merged.forEach((s, i) => {
    const label = s.speaker_label ?? '';
    byLabel.set(label, [...(byLabel.get(label) ?? []), i]);
  });
  for (const indexes of byLabel.values()) {
    const longest = [...indexes].sort(
      (a, b) => merged[b].end_ms - merged[b].start_ms - (merged[a].end_ms - merged[a].start_ms) || a - b,
    );
    for (const i of longest.slice(0, maxPerSpeaker)) withVector.add(i);
  }
  return merged.map((s, i) => ({
    speaker_label: s.speaker_label,
    text: s.text,
    start_ms: s.start_ms,
    end_ms: s.end_ms,
    confidence: 0.97,
    is_final: true,
    feature_vector: withVector.has(i) && s.speaker_label ? featureVector(s.speaker_label, i) : null,
  }));
}
