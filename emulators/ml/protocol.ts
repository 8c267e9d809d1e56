// The ML side of the contract as an ML team reads it in the published documents
// (/ml-contract/openapi.json, /ml-contract/asyncapi.json, /ml-contract/recording-finalized.schema.json
// and docs/ml-integration.md), written out here instead of imported from the core's contract
// module: if the published contract changes, the stand-in no longer matches it and fails
// (test/ml/stand-in-protocol.test.ts holds these against the published schemas; the conformance
// kit checks the stand-in's answers).

/** POST /streaming's body. */
export interface StreamingStart {
  meeting_id: string;
  transcription_id: string;
  audio_version: number;
  encoding: 'pcm_s16le' | 'webm_opus';
  sample_rate: number;
  start_sequence: number;
}

/** The recording.finalized message. */
export interface RecordingFinalized {
  meeting_id: string;
  audio_version: number;
  transcription_id: string | null;
  storage_path: string | null;
  is_degraded: boolean;
  missing_ranges: [number, number][];
  /** 1, then one more each time the core offers the take again after a claim expired. */
  attempt: number;
  /** Absent or `take`: a live take. `upload`: the meeting's uploaded file (no live segments). */
  source?: 'take' | 'upload';
}

/** The work queue the ML pulls: `recording.finalized.ml-batch` for the topic `recording.finalized`. */
export const batchSubscription = (topic: string) => `${topic}.ml-batch`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
type Rule = (v: unknown) => boolean;
const uuid: Rule = (v) => typeof v === 'string' && UUID.test(v);
const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Rule =>
  (v) =>
    Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
const nullable =
  (rule: Rule): Rule =>
  (v) =>
    v === null || rule(v);
const range: Rule = (v) => Array.isArray(v) && v.length === 2 && v.every(int(0));

export const START_RULES: Record<keyof StreamingStart, Rule> = {
  meeting_id: uuid,
  transcription_id: uuid,
  audio_version: int(1),
  encoding: (v) => v === 'pcm_s16le' || v === 'webm_opus',
  sample_rate: int(8_000, 192_000),
  start_sequence: int(0),
};

export const FINALIZED_RULES: Record<keyof RecordingFinalized, Rule> = {
  meeting_id: uuid,
  audio_version: int(1),
  transcription_id: nullable(uuid),
  storage_path: nullable((v) => typeof v === 'string'),
  is_degraded: (v) => typeof v === 'boolean',
  missing_ranges: (v) => Array.isArray(v) && v.every(range),
  attempt: int(1),
  source: (v) => v === undefined || v === 'take' || v === 'upload',
};

/** The value when every field keeps its rule (unknown fields are ignored), else the fields that do not. */
export function read<T>(rules: Record<keyof T, Rule>, value: unknown): { ok: T } | { invalid: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { invalid: Object.keys(rules) };
  const fields = value as Record<string, unknown>;
  const invalid = Object.entries<Rule>(rules).flatMap(([k, rule]) => (rule(fields[k]) ? [] : [k]));
  return invalid.length ? { invalid } : { ok: value as T };
}
