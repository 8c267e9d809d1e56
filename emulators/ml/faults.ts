// The stand-in's fault switch: each fault is one mistake ML teams really ship, so that the
// conformance kit's self-test (test/ml/conformance-kit.test.ts) proves the kit catches it. The
// stand-in keeps the contract everywhere else.
import type { RestClient } from '@mi/client';
import type { RecordingFinalized } from './protocol';
export const FAKE_ML_FAULTS = {
  'wrong-auth-header': 'expects the credential in X-Api-Key, refusing the core’s Authorization: Bearer',
  'no-auth': 'checks no credential anywhere',
  'weak-auth': 'accepts any Bearer token (POST /streaming, the socket upgrade, DELETE)',
  'open-socket': 'checks the credential on POST /streaming only: the socket upgrade and DELETE take anyone',
  'slow-start': 'answers POST /streaming after `delayMs`',
  'text-plain-201': 'answers the session as text/plain',
  backwards: 'posts live segments whose end_ms is before their start_ms',
  overlap: "posts live segments that start inside the same speaker's previous segment",
  dupes: 'posts the frames a resume repeats again, with fresh segment ids and keys',
  'ignored-drain': 'answers DELETE at once and posts what it still processes (each segment `delayMs` late) after',
  'slow-drain': 'answers DELETE after `delayMs`',
  'wrong-core-token': 'calls the core with a wrong service token',
  'claim-only': 'claims a finalized take and never completes nor renews it',
} as const;

export type FakeMlFault = keyof typeof FAKE_ML_FAULTS;

export interface FaultState {
  fault: FakeMlFault | null;
  /** The delay of slow-start, slow-drain and ignored-drain. */
  delayMs: number;
}

/** The batch pass of `claim-only`: it claims the take, then does nothing more (as a pass that died). */
export async function claimAndDie(core: RestClient, msg: RecordingFinalized): Promise<void> {
  if (!msg.transcription_id) return;
  await core.PATCH('/transcriptions/{id}', {
    params: { path: { id: msg.transcription_id } },
    body: { status: 'synthesizing', status_message: 'batch pass started' },
  });
}
