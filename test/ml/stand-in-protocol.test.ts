// The stand-in ML's own reading of the contract (emulators/ml/protocol.ts, written from the
// published documents) held against those documents: the same fields, required as published, accepting and
// refusing the same values. A change of the published contract fails here, and the stand-in's
// answers are checked against it by the conformance kit (conformance.test.ts).
import { randomUUID } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { mlBatchSubscription } from '@mi/lib/ml/contract';
import { mlOpenApiDocument, recordingFinalizedSchema } from '@mi/lib/ml/documents';
import {
  batchSubscription,
  FINALIZED_RULES,
  read,
  START_RULES,
  type RecordingFinalized,
  type StreamingStart,
} from '../../emulators/ml/protocol';

const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

type Schema = { properties: Record<string, unknown>; required: string[] };
const startSchema = mlOpenApiDocument().paths['/streaming'].post.requestBody.content['application/json']
  .schema as unknown as Schema;
const finalizedSchema = recordingFinalizedSchema() as unknown as Schema;

const start: StreamingStart = {
  meeting_id: randomUUID(),
  transcription_id: randomUUID(),
  audio_version: 1,
  encoding: 'pcm_s16le',
  sample_rate: 16_000,
  start_sequence: 0,
};
const finalized: RecordingFinalized = {
  meeting_id: randomUUID(),
  audio_version: 2,
  transcription_id: randomUUID(),
  storage_path: 'recordings/m/v2/audio.wav',
  is_degraded: true,
  missing_ranges: [[30, 39]],
  attempt: 2,
};
/** Values of every kind each field is tried with. */
const PROBES: unknown[] = [
  null,
  undefined,
  'not-a-uuid',
  randomUUID(),
  -1,
  0,
  1,
  1.5,
  7_999,
  8_000,
  192_001,
  'pcm_s16le',
  'webm_opus',
  'mp3',
  true,
  {},
  [],
  [[0, 1]],
  [[1]],
  [[-1, 2]],
  'recordings/x.wav',
  'take',
  'upload',
];

describe.each([
  ['POST /streaming (OpenAPI startStreaming)', startSchema, START_RULES, start, []],
  ['recording.finalized (JSON Schema)', finalizedSchema, FINALIZED_RULES, finalized, ['source']],
] as const)('the stand-in reads %s as published', (_name, schema, rules, sample, optional: readonly string[]) => {
  const validate = ajv.compile(schema);
  const accepts = (value: unknown) => 'ok' in read(rules as Record<string, (v: unknown) => boolean>, value);

  it('should know exactly the published fields, each required as published', () => {
    expect(Object.keys(rules).sort()).toEqual(Object.keys(schema.properties).sort());
    expect([...schema.required].sort()).toEqual(
      Object.keys(rules)
        .filter((k) => !optional.includes(k))
        .sort(),
    );
  });

  it('should accept the valid message and ignore unknown fields, as the schema does', () => {
    for (const value of [
      sample,
      { ...sample, added_later: 1 },
      ...optional.map((k) => ({ ...sample, [k]: undefined })),
    ]) {
      expect(validate(value)).toBe(true);
      expect(accepts(value)).toBe(true);
    }
  });

  it('should accept and refuse every probe of every field exactly as the schema does', () => {
    const disagreements = Object.keys(rules).flatMap((field) =>
      PROBES.map((probe) => ({ ...sample, [field]: probe }))
        .filter((value) => validate(value) !== accepts(value))
        .map((value) => `${field}=${JSON.stringify((value as Record<string, unknown>)[field])}`),
    );
    expect(disagreements).toEqual([]);
    expect(accepts(null)).toBe(false);
    expect(accepts([sample])).toBe(false);
  });
});

it("should pull the subscription the core's documents name", () => {
  expect(batchSubscription('recording.finalized')).toBe(mlBatchSubscription('recording.finalized'));
  expect(batchSubscription('recording.finalized')).toBe('recording.finalized.ml-batch');
});
