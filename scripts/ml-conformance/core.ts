// The kit's side of the real core the ML service calls back: a meeting and a transcription for the
// take (as a user and as the service, over the core's REST API), and reads of what the ML wrote.
import { randomUUID } from 'node:crypto';
import { mintDevToken } from '@mi/lib/adapters/auth';

export interface CoreAccess {
  url: string;
  /** The local stack's storage emulator (STORAGE_EMULATOR_HOST): it lists the reads of signed URLs. */
  storageEmulator: string;
  serviceToken: string;
  /** Signs a development user token: only the meeting is created as a user. */
  identitySecret: string;
}

export interface Reply {
  status: number;
  body: unknown;
}

export async function callCore(
  core: CoreAccess,
  method: string,
  path: string,
  token = core.serviceToken,
  body?: unknown,
): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'idempotency-key': randomUUID() };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const res = await fetch(`${core.url}${path}`, { method, headers, body: payload });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function expectStatus(reply: Promise<Reply>, status: number, what: string) {
  const r = await reply;
  if (r.status !== status) throw new Error(`${what} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body as Record<string, unknown>;
}

/** The development user the kit's meetings belong to. */
export const kitUser = (core: CoreAccess) => mintDevToken(core.identitySecret, 'ml-conformance');

/** A meeting of the kit's user, of source_type recording. */
export async function createMeeting(core: CoreAccess, title: string): Promise<string> {
  const meeting = { title, source_type: 'recording' };
  const reply = await expectStatus(
    callCore(core, 'POST', '/meetings', await kitUser(core), meeting),
    201,
    'POST /meetings',
  );
  return reply.id as string;
}

/** A meeting with a transcription in `transcribing`, as the core has when a take starts. */
export async function prepareTake(core: CoreAccess): Promise<{ meetingId: string; transcriptionId: string }> {
  const meetingId = await createMeeting(core, 'ML conformance take');
  const created = await expectStatus(
    callCore(core, 'POST', `/meetings/${meetingId}/transcriptions`),
    201,
    'POST /meetings/{id}/transcriptions',
  );
  const transcriptionId = created.id as string;
  const transcribing = { status: 'transcribing', status_message: 'ML conformance take' };
  const patch = callCore(core, 'PATCH', `/transcriptions/${transcriptionId}`, undefined, transcribing);
  await expectStatus(patch, 200, 'PATCH /transcriptions/{id}');
  return { meetingId, transcriptionId };
}

/** Polls `read` until it returns a value (not undefined), at most timeoutMs; undefined on timeout. */
export async function waitFor<T>(read: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined || Date.now() >= deadline) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The objects an ML read through signed URLs (the storage emulator's log), newest last. */
export async function signedReads(core: CoreAccess): Promise<{ object: string; at: string }[]> {
  const host = core.storageEmulator.replace(/\/$/, '');
  const res = await fetch(`${/^https?:/.test(host) ? host : `http://${host}`}/_emulator/signed-reads`);
  if (!res.ok) throw new Error(`the storage emulator's /_emulator/signed-reads answered ${res.status}`);
  return ((await res.json()) as { reads: { object: string; at: string }[] }).reads;
}
