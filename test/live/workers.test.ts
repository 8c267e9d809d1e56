// The Cloud Run entry with two workers (LIVE_WORKERS=2), real processes on the test's database and
// emulators: connections land on both workers, each a live instance of its own; a take started on
// one and resumed on the other stores every frame once; a dead worker is replaced, a crash loop
// ends the instance, and no worker outlives a killed primary; SIGTERM to the primary drains both
// workers (every frame stored, 1012) and the whole process tree is gone within Cloud Run's 10 s.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getRecording } from '@mi/lib/repositories/recordings';
import { TestClient, createMeeting, pcmFrame, range, storedAudio, token, useInstances, type Instance } from './helpers';
import { sleep, until } from '../support/poll';
import { isAlive, type ServerProcess } from './server-process';

const live = useInstances(1);
let rest: Instance; // an in-process instance for REST and reading stored audio
beforeAll(() => void ([rest] = live.instances));
const workerPids: number[] = [];

afterEach(() => {
  for (const pid of workerPids.splice(0)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

async function startTwo(extra: Record<string, string>): Promise<ServerProcess> {
  const server = await live.startServer(extra, 2);
  workerPids.push(...server.instances.map((i) => i.pid));
  return server;
}

/** Polls `probe` until it answers (anything but undefined; null too). */
const untilAnswered = <T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> =>
  until(what, probe, { ok: (v) => v !== undefined, timeoutMs, intervalMs: 100 });

/** Clients that each started a take of their own; the take's owner is the worker they landed on. */
async function recordingClients(server: ServerProcess, t: string, n: number) {
  const out: { client: TestClient; meetingId: string; owner: string }[] = [];
  for (let i = 0; i < n; i++) {
    const client = await TestClient.connect(server.wsUrl, t);
    const meetingId = await createMeeting(rest, t);
    await client.start(meetingId);
    out.push({ client, meetingId, owner: (await getRecording(rest.rt.db, meetingId, 1))!.owner_instance! });
  }
  return out;
}

describe('server.ts with two workers', () => {
  it('should spread connections over both workers and move a take between them without losing or repeating a frame', async () => {
    const server = await startTwo({ RECORDING_SEGMENT_TARGET_MS: '500', RECORDING_PROGRESS_EVERY_FRAMES: '5' });
    const ids = server.instances.map((i) => i.instance);
    expect(new Set(ids).size).toBe(2);
    expect(new Set([...server.instances.map((i) => i.pid), server.process.pid]).size).toBe(3);
    for (let i = 0; i < 4; i++)
      expect(await (await fetch(`${server.url}/healthz`)).json()).toMatchObject({ status: 'ok' });

    const t = await token(rest.config, 'two-workers');
    const clients = await recordingClients(server, t, 4);
    expect(new Set(clients.map((c) => c.owner))).toEqual(new Set(ids));

    // A take on worker X with acknowledged frames and some still in X's buffer...
    const a = clients.find((c) => c.owner === ids[0])!;
    const b = clients.find((c) => c.owner === ids[1])!;
    for (const seq of range(0, 29)) a.client.frame(seq);
    await a.client.acked(a.meetingId, 29);
    for (const seq of range(30, 34)) a.client.frame(seq);
    await sleep(100); // kept: the worker is another process and says nothing about frames it holds unwritten

    // ...is resumed by a connection on worker Y (free once its own take stopped): Y takes it over,
    // X writes what it held and lets go.
    await b.client.stop(b.meetingId);
    const resumed = await b.client.resume(a.meetingId, 1);
    expect(resumed).toMatchObject({ type: 'RecordingResumed', audio_version: 1 });
    expect((await getRecording(rest.rt.db, a.meetingId, 1))?.owner_instance).toBe(ids[1]);
    expect(await a.client.waitFor({ type: 'RecordingReleased', meeting_id: a.meetingId })).toMatchObject({
      reason: 'resumed_elsewhere',
    });
    for (const seq of range(resumed.highest_contiguous_sequence + 1, 44)) b.client.frame(seq);
    expect(await b.client.stop(a.meetingId)).toMatchObject({ highest_contiguous_sequence: 44, missing_ranges: [] });

    const stored = await storedAudio(rest, a.meetingId, 1); // throws on overlapping manifest rows
    expect(stored.sequences).toEqual(range(0, 44));
    expect(stored.bytes.equals(Buffer.concat(range(0, 44).map(pcmFrame)))).toBe(true);
    const { rows } = await rest.rt.db.query<{ payload: { previous_owner: string; instance: string } }>(
      'test.events',
      `SELECT payload FROM recording_event_history WHERE meeting_id = $1 AND event_type = 'recording_resumed'`,
      [a.meetingId],
    );
    expect(rows.map((r) => [r.payload.previous_owner, r.payload.instance])).toEqual([[ids[0], ids[1]]]);
    for (const c of clients) c.client.close();
  });

  it('should replace a worker that dies with a new live instance', async () => {
    const server = await startTwo({});
    const [dead, kept] = server.instances;
    process.kill(dead.pid, 'SIGKILL');
    const fresh = await server.listening(3); // the replacement
    workerPids.push(fresh.pid);
    expect(fresh.instance).not.toBe(dead.instance);
    expect(fresh.instance).not.toBe(kept.instance);
    expect(isAlive(dead.pid)).toBe(false);

    // Both the survivor and the replacement take connections.
    const t = await token(rest.config, 'replaced');
    const clients = await recordingClients(server, t, 4);
    expect(new Set(clients.map((c) => c.owner))).toEqual(new Set([kept.instance, fresh.instance]));
    for (const c of clients) c.client.close();

    // Workers do not outlive a primary that was killed outright (node:cluster exits them).
    server.process.kill('SIGKILL');
    await untilAnswered('the workers to exit', () => ([kept.pid, fresh.pid].some(isAlive) ? undefined : true), 10_000);
  });

  it('should stop replacing workers that keep dying: after 5 replacements within a minute the instance exits 1', async () => {
    const server = await startTwo({});
    const [first, survivor] = server.instances;
    const forked = () => server.logs.filter((l) => l.message === 'live worker forked').map((l) => l.pid as number);
    const killed = [first.pid];
    process.kill(first.pid, 'SIGKILL');
    // Each replacement is killed as soon as it is forked (a crash loop) until the primary gives up.
    while (killed.length < 10) {
      const next = await untilAnswered('a replacement or the exit', () =>
        server.process.exitCode !== null ? null : forked().find((pid) => pid !== survivor.pid && !killed.includes(pid)),
      );
      if (next === null) break;
      workerPids.push(next);
      process.kill(next, 'SIGKILL');
      killed.push(next);
    }
    expect(await server.exited).toBe(1);
    expect(killed).toHaveLength(6); // the first death and 5 replacements, then no more
    expect(server.logs.some((l) => l.message === 'live workers keep dying; stopping the instance')).toBe(true);
    expect(server.logs.some((l) => l.message === 'stopped' && l.instance === survivor.instance)).toBe(true); // the survivor drained
    for (const pid of [...killed, survivor.pid]) expect(isAlive(pid)).toBe(false);
  });

  it('should drain both workers on SIGTERM to the primary: every frame stored, 1012, all processes gone within 10 s', async () => {
    const server = await startTwo({ RECORDING_SEGMENT_TARGET_MS: '10000' });
    const t = await token(rest.config, 'drain');
    const clients = await recordingClients(server, t, 2);
    expect(new Set(clients.map((c) => c.owner)).size).toBe(2);
    for (const c of clients) for (const seq of range(0, 14)) c.client.frame(seq); // far less than a segment: all in memory
    await sleep(300); // kept: the workers are other processes and say nothing about frames they hold unwritten
    for (const c of clients) expect((await storedAudio(rest, c.meetingId, 1)).rows).toHaveLength(0);

    server.process.kill('SIGTERM');
    for (const c of clients) {
      expect(await c.client.waitFor({ type: 'ReconnectAdvised' })).toEqual({
        type: 'ReconnectAdvised',
        reason: 'shutdown',
      });
      expect((await c.client.closed).code).toBe(1012);
    }
    expect(await server.exited).toBe(0); // past the 8 s deadline the process exits 1 (EXIT_DEADLINE_MS)
    for (const { pid } of server.instances) expect(isAlive(pid)).toBe(false);

    for (const c of clients) {
      expect((await storedAudio(rest, c.meetingId, 1)).sequences).toEqual(range(0, 14));
      expect(await getRecording(rest.rt.db, c.meetingId, 1)).toMatchObject({
        state: 'recording',
        owner_instance: null,
      });
    }
    expect(
      server.logs
        .filter((l) => l.message === 'stopped')
        .map((l) => l.instance)
        .sort(),
    ).toEqual(server.instances.map((i) => i.instance).sort());
  });
});
