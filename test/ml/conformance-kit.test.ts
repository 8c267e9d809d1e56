// The conformance kit's self-test: our stand-in ML passes every check, and the stand-in with one
// fault switched on (emulators/ml/faults.ts: the mistakes ML teams really ship) fails the kit
// first at the check that names its fault. One core, one stand-in, one witness for every run: the
// stand-in calls the core through the kit's witness, so failing rows can quote the core's answers.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mi/lib/config';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { runSweep } from '../../functions/sweep';
import type { FakeMlFault } from '../../emulators/ml/faults';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import { runConformance, type Check, type ConformanceOptions } from '../../scripts/ml-conformance/run';
import { startWitness, type Witness } from '../../scripts/ml-conformance/witness';
import { fileEnv, openTestDatabase, startInstance, type Instance } from '../live/helpers';

let database: OpenedDatabase;
let core: Instance;
let ml: FakeMl;
let witness: Witness;
let sweep: NodeJS.Timeout;

beforeAll(async () => {
  database = await openTestDatabase();
  const env = fileEnv();
  const config = loadConfig(env);
  // The core's address is known only once it runs: the witness learns it then.
  witness = await startWitness('http://127.0.0.1:9');
  ml = await startFakeMl({ port: 0, coreUrl: witness.url, serviceToken: config.SERVICE_AUTH_TOKEN, config });
  core = await startInstance(database, env, { mlUrl: ml.url });
  witness.coreUrl = core.url;
  // As the local stack does: the sweep finalizes stopped takes (and publishes recording.finalized).
  sweep = setInterval(() => void runSweep(core.rt).catch(() => undefined), 200);
}, 60_000);

afterEach(() => ml.setFault(null));

afterAll(async () => {
  clearInterval(sweep);
  await core?.close();
  await ml?.stop();
  await witness?.close();
  await database?.close();
});

function run(options: Partial<ConformanceOptions> = {}): Promise<Check[]> {
  return runConformance({
    mlUrl: ml.url,
    core: {
      url: core.url,
      serviceToken: core.config.SERVICE_AUTH_TOKEN,
      identitySecret: core.config.IDENTITY_SECRET_KEY!,
      storageEmulator: core.config.STORAGE_EMULATOR_HOST!,
    },
    pubsub: {
      projectId: core.config.GOOGLE_CLOUD_PROJECT,
      emulatorHost: core.config.PUBSUB_EMULATOR_HOST,
      topic: core.config.PUBSUB_TOPIC_RECORDING_FINALIZED,
    },
    timeoutMs: 15_000,
    finalizeMs: 10_000,
    quietMs: 3_000,
    witness,
    ...options,
  });
}

const firstFailure = (checks: Check[]) => checks.find((c) => !c.pass);

describe('ML conformance kit against the stand-in and its faults', () => {
  it('should pass the stand-in: every check, with the core’s own bounds', async () => {
    const checks = await run();
    expect(checks.filter((c) => !c.pass)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual([
      'setup: a meeting and a transcription on the core',
      'POST /streaming without a credential is refused (401/403)',
      'POST /streaming with a wrong bearer token is refused (401/403)',
      "POST /streaming answers within the core's bound (RECORDING_ML_START_TIMEOUT_SECONDS, 10 s)",
      'POST /streaming answers 201 with a session (OpenAPI startStreaming)',
      "POST /streaming's 201 is application/json",
      'the audio socket takes frames 0–29 and 40–59 (a gap)',
      'POST /streaming with start_sequence 50 resumes the take',
      "the resumed session's socket takes frames 50–99 (50–59 again, as a resume may repeat frames)",
      "DELETE /streaming/{id} answers within the core's bound (RECORDING_ML_DRAIN_TIMEOUT_SECONDS, 5 s)",
      'DELETE /streaming/{id} drains: 200 with a drain report, or 204',
      'no live segment of the drained session arrives after its drain answered (3 s watched)',
      'DELETE /streaming/{id} of an unknown session answers 404',
      'the audio socket refuses an upgrade without a credential or with a wrong bearer (401/403)',
      'DELETE /streaming/{id} without a credential or with a wrong bearer is refused (401/403)',
      'messages on the audio socket follow the AsyncAPI document (Warning, Dropped)',
      'live segments reach the core (POST /transcriptions/{id}/segments)',
      "live segments' times run forwards (0 <= start_ms <= end_ms)",
      'no live segment is posted twice under fresh ids (the frames a resume repeats)',
      "no live segment overlaps the same speaker's previous segment",
      'a real take stored on the core (5 s recorded over its WebSocket, then stopped)',
      'the core finalized the stored take (and published recording.finalized)',
      'recording.finalized: the ML claims the stored take (PATCH → synthesizing)',
      'the claimed batch pass completes the take (or renews its claim: the claim is a lease)',
      "the ML read the take's audio through the signed URL of GET /meetings/{id}/audio-url",
      'the batch pass wrote the synthesis and the headline',
      'a redelivered recording.finalized: the claim answers 409 and the ML changes nothing',
    ]);
  });

  // Each fault, the kit's first failing check and what its reason must say.
  const faults: {
    fault: FakeMlFault;
    check: string;
    reason: string;
    delayMs?: number;
    options?: Partial<ConformanceOptions>;
  }[] = [
    { fault: 'wrong-auth-header', check: 'POST /streaming answers 201', reason: 'Authorization: Bearer' },
    { fault: 'no-auth', check: 'POST /streaming without a credential is refused', reason: 'anyone' },
    { fault: 'weak-auth', check: 'POST /streaming with a wrong bearer token is refused', reason: 'any Bearer' },
    { fault: 'open-socket', check: 'the audio socket refuses an upgrade', reason: 'was accepted' },
    {
      fault: 'slow-start',
      check: "POST /streaming answers within the core's bound (RECORDING_ML_START_TIMEOUT_SECONDS, 2 s)",
      reason: 'no answer within 2 s',
      delayMs: 4_000,
      options: { startTimeoutMs: 2_000 },
    },
    { fault: 'text-plain-201', check: "POST /streaming's 201 is application/json", reason: 'text/plain' },
    // The core itself refuses a segment that ends before it starts (422, decisions.md section 8):
    // the kit names the refusal, quoting the core's answer.
    { fault: 'backwards', check: 'live segments reach the core', reason: '422' },
    { fault: 'overlap', check: 'no live segment overlaps', reason: "same speaker's previous segment" },
    { fault: 'dupes', check: 'no live segment is posted twice', reason: 'posted twice with fresh ids' },
    {
      fault: 'ignored-drain',
      check: 'no live segment of the drained session arrives after its drain answered',
      reason: 'after the drain answered',
      delayMs: 300,
    },
    {
      fault: 'slow-drain',
      check: "DELETE /streaming/{id} answers within the core's bound (RECORDING_ML_DRAIN_TIMEOUT_SECONDS, 1 s)",
      reason: 'no answer within 1 s',
      delayMs: 3_000,
      options: { drainTimeoutMs: 1_000 },
    },
    // The core's refusal is quoted: status and problem type, on the path the ML called.
    {
      fault: 'wrong-core-token',
      check: 'live segments reach the core',
      reason: '/segments → 401 https://meeting-intelligence.dev/problems/unauthorized',
      options: { timeoutMs: 3_000 },
    },
  ];
  for (const { fault, check, reason, delayMs, options } of faults) {
    it(`should fail the stand-in with the fault ${fault} first at the check that names it`, async () => {
      ml.setFault(fault, delayMs);
      const checks = await run({ only: 'live', ...options });
      expect(firstFailure(checks)).toMatchObject({ name: expect.stringContaining(check), pass: false });
      expect(firstFailure(checks)!.reason).toContain(reason);
    });
  }

  it('should fail the stand-in with the fault weak-auth also on the socket and the DELETE', async () => {
    ml.setFault('weak-auth');
    const checks = await run({ only: 'live' });
    const failed = checks.filter((c) => !c.pass).map((c) => c.name);
    expect(failed).toEqual([
      'POST /streaming with a wrong bearer token is refused (401/403)',
      'the audio socket refuses an upgrade without a credential or with a wrong bearer (401/403)',
      'DELETE /streaming/{id} without a credential or with a wrong bearer is refused (401/403)',
    ]);
  });

  it('should fail the stand-in with the fault claim-only at the lease check (its claim itself succeeded)', async () => {
    ml.setFault('claim-only');
    const checks = await run({ only: 'batch', timeoutMs: 5_000 });
    expect(checks.find((c) => c.name.startsWith('recording.finalized: the ML claims'))).toMatchObject({ pass: true });
    const failure = firstFailure(checks)!;
    expect(failure.name).toBe('the claimed batch pass completes the take (or renews its claim: the claim is a lease)');
    expect(failure.reason).toContain('neither completed nor renewed its claim within 5 s');
    expect(failure.reason).not.toContain('the core answered your service');
  });
});
