// The answers an ML service may give, checked against the published documents (lib/ml/documents.ts,
// served at /ml-contract/*) with ajv, then against the contract module itself: the documents
// cannot express every rule the core applies (audio_url must be ws:// or wss://).
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { z } from 'zod';
import { DrainReport, MlMessage, StreamingSession } from '@mi/lib/ml/contract';
import { mlAsyncApiDocument, mlOpenApiDocument, recordingFinalizedSchema } from '@mi/lib/ml/documents';

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);

const openapi = mlOpenApiDocument();
const asyncapi = mlAsyncApiDocument();
const messages = asyncapi.channels.audio.messages;

/** null when valid, else why not. */
export type Validator = (value: unknown) => string | null;

function validator(jsonSchema: object, contract: z.ZodType): Validator {
  const validate = ajv.compile(jsonSchema);
  return (value) => {
    if (!validate(value)) return `published schema: ${ajv.errorsText(validate.errors, { dataVar: 'body' })}`;
    const parsed = contract.safeParse(value);
    if (parsed.success) return null;
    return `contract: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`;
  };
}

export const validSession = validator(
  openapi.paths['/streaming'].post.responses['201'].content['application/json'].schema,
  StreamingSession,
);
export const validDrainReport = validator(
  openapi.paths['/streaming/{id}'].delete.responses['200'].content['application/json'].schema,
  DrainReport,
);
// The socket's ML → core messages: one of the receive operation's messages (Warning, Dropped).
export const validMlMessage = validator({ oneOf: [messages.Warning.payload, messages.Dropped.payload] }, MlMessage);
/** The kit's own recording.finalized, checked before publishing: the kit must keep the contract too. */
const finalized = ajv.compile(recordingFinalizedSchema());
export const validFinalized: Validator = (value) => (finalized(value) ? null : ajv.errorsText(finalized.errors));
