// The published core ↔ ML contract, generated from the schemas of ./contract.ts (decisions.md
// section 7): the OpenAPI document of what the core calls on the ML service, the AsyncAPI
// document of the audio socket both ways, and the JSON Schema of `recording.finalized`. Served
// at /ml-contract/* by the local stack and the live service; the conformance kit checks an ML
// service against the same schemas. Objects are open (no additionalProperties: false): either side
// ignores fields it does not know, so the contract can grow.
import { z } from 'zod';
import {
  CoreRejection,
  DrainReport,
  MlDropped,
  MlWarning,
  RecordingFinalized,
  StreamingSession,
  StreamingStart,
} from './contract';

export const ML_CONTRACT_PATHS = {
  openapi: '/ml-contract/openapi.json',
  asyncapi: '/ml-contract/asyncapi.json',
  recordingFinalized: '/ml-contract/recording-finalized.schema.json',
} as const;

const VERSION = '1.0.0';

const jsonSchema = (schema: z.ZodType, target: 'draft-7' | 'draft-2020-12') => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { target, io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return json;
};

const problem = {
  description: 'any error; the core records it and retries with backoff (POST) or gives up on the drain (DELETE)',
};

export function mlOpenApiDocument() {
  const schema = (s: z.ZodType) => jsonSchema(s, 'draft-2020-12');
  return {
    openapi: '3.1.0',
    info: {
      title: 'ML service: what the core calls',
      version: VERSION,
      description:
        'The ML service implements these operations; the core (the live service) calls them with `Authorization: Bearer <credential>` ' +
        'and the W3C `traceparent`/`tracestate` of the take. The credential: in staging and production a Google-signed ID token ' +
        "of the core's live service account whose audience is the ML service's URL (ML_SERVICE_URL as the core is configured); " +
        'verify it with google-auth-library `verifyIdToken({ idToken, audience })` and check its `email` (docs/ml-integration.md). ' +
        'In development and tests the shared SERVICE_AUTH_TOKEN. Bounds: the core waits RECORDING_ML_START_TIMEOUT_SECONDS ' +
        '(default 10) for POST /streaming and RECORDING_ML_DRAIN_TIMEOUT_SECONDS (default 5) for DELETE /streaming/{id}. ' +
        `The audio itself goes over the WebSocket of \`audio_url\` (${ML_CONTRACT_PATHS.asyncapi}).`,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: 'http://localhost:4003', description: 'the stand-in ML of the local stack (ML_PORT)' }],
    security: [{ serviceAuth: [] }],
    tags: [{ name: 'streaming', description: 'one live session per take (and per resume)' }],
    paths: {
      '/streaming': {
        post: {
          operationId: 'startStreaming',
          tags: ['streaming'],
          summary: 'Start (or resume) the streaming session of a take',
          description:
            'Called when a take starts, and again with `start_sequence` > 0 when it resumes (the take moved to another ' +
            'instance, or the previous session was lost). The core then opens `audio_url`. The core waits ' +
            'RECORDING_ML_START_TIMEOUT_SECONDS (default 10) for the answer; a slower answer, any status but 201, or a body ' +
            'that is not a session counts as unavailable: the core abandons the request, tells the user (ml_unavailable) and ' +
            'starts again with backoff (0.25 s … 10 s) while the take is open, keeping its last ~10 s of frames for you.',
          'x-core-timeout': { variable: 'RECORDING_ML_START_TIMEOUT_SECONDS', default_seconds: 10 },
          requestBody: { required: true, content: { 'application/json': { schema: schema(StreamingStart) } } },
          responses: {
            '201': {
              description: 'the session',
              content: { 'application/json': { schema: schema(StreamingSession) } },
            },
            '4XX': problem,
            '5XX': problem,
          },
        },
      },
      '/streaming/{id}': {
        delete: {
          operationId: 'drainStreaming',
          tags: ['streaming'],
          summary: 'Drain and end a session',
          description:
            'Called when the take stops, after every frame was written to the socket: process what was received (up to ' +
            '`last_sequence`), then answer. The core waits at most RECORDING_ML_DRAIN_TIMEOUT_SECONDS (default 5) and then ' +
            'closes the socket either way (the take records ml_drain_timeout); answer within it.',
          'x-core-timeout': { variable: 'RECORDING_ML_DRAIN_TIMEOUT_SECONDS', default_seconds: 5 },
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'the session id' },
            {
              name: 'last_sequence',
              in: 'query',
              required: false,
              schema: { type: 'integer', minimum: 0 },
              description:
                'the sequence number of the last frame the core sent on this session (absent when it sent none): once you ' +
                'have it, you have everything this session will get',
            },
          ],
          responses: {
            '200': {
              description: 'the drain report',
              content: { 'application/json': { schema: schema(DrainReport) } },
            },
            '204': { description: 'drained (same as `{"drained": true}`)' },
            '404': problem,
            '5XX': problem,
          },
        },
      },
    },
    components: {
      securitySchemes: {
        serviceAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            "staging and production: a Google-signed ID token, audience the ML service's URL, of the core's live service " +
            'account; development and tests: the shared SERVICE_AUTH_TOKEN (docs/ml-integration.md). Refuse anything else with 401.',
        },
      },
    },
  };
}

export function mlAsyncApiDocument() {
  const schema = (s: z.ZodType) => jsonSchema(s, 'draft-7');
  const messages = {
    AudioFrame: {
      name: 'AudioFrame',
      summary:
        'core → ML, binary: 8 bytes big-endian unsigned sequence number, then one frame (100 ms) as the client sent it',
      description:
        'Frames arrive in sequence order but not gap-free: a frame the core could not forward is dropped for ML (and ' +
        'reported as ml_frames_dropped to the user); a resumed session starts at its start_sequence, and may repeat frames. ' +
        'The last frame of a session is the `last_sequence` of its DELETE /streaming/{id}.',
      contentType: 'application/octet-stream',
      payload: { type: 'string', format: 'binary' },
    },
    Rejected: {
      name: 'Rejected',
      summary: 'core → ML',
      contentType: 'application/json',
      payload: schema(CoreRejection),
    },
    Warning: { name: 'Warning', summary: 'ML → core', contentType: 'application/json', payload: schema(MlWarning) },
    Dropped: { name: 'Dropped', summary: 'ML → core', contentType: 'application/json', payload: schema(MlDropped) },
  };
  const ref = (name: keyof typeof messages) => ({ $ref: `#/channels/audio/messages/${name}` });
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'ML service: the audio socket and recording.finalized',
      version: VERSION,
      description:
        'The WebSocket the core opens at the `audio_url` of POST /streaming (with the same Authorization header as POST ' +
        '/streaming: check it and refuse the upgrade with 401 otherwise): frames ' +
        'go to the ML, health messages come back as JSON text. A text message the core cannot use (not JSON, an unknown ' +
        'type, invalid fields) or any binary message from the ML is answered with `Rejected`, logged and counted ' +
        `(live.ml.messages.rejected); one larger than 64 KiB closes the socket with 1009. No permessage-deflate.`,
    },
    servers: {
      ml: { host: 'localhost:4003', protocol: 'ws', description: 'the stand-in ML of the local stack' },
      pubsub: {
        host: 'pubsub.googleapis.com',
        protocol: 'googlepubsub',
        description: 'Google Pub/Sub (locally its emulator, PUBSUB_EMULATOR_HOST)',
      },
    },
    channels: {
      audio: {
        address: '{audio_url}',
        servers: [{ $ref: '#/servers/ml' }],
        parameters: { audio_url: { description: 'as answered by POST /streaming' } },
        messages,
      },
      recordingFinalized: {
        address: 'recording.finalized',
        servers: [{ $ref: '#/servers/pubsub' }],
        description:
          'The topic PUBSUB_TOPIC_RECORDING_FINALIZED; the ML pulls the subscription `recording.finalized.ml-batch` (one ' +
          'work queue, ack deadline 600 s, redelivered with backoff 10 s … 600 s). Ack a handled message (completed, ' +
          'failed, or the claim refused 409 / 404); nack one you cannot handle now, so that it returns after its backoff ' +
          'rather than its ack deadline.',
        messages: {
          RecordingFinalized: {
            name: 'RecordingFinalized',
            summary:
              'core → ML: a take to run the batch pass on (claim it: PATCH /transcriptions/{id} to synthesizing)',
            description:
              'At least once. `attempt` is 1 when the take is finalized and one more each time the core offers it again ' +
              'because a batch pass let its claim (a lease of ML_BATCH_CLAIM_LEASE_SECONDS) expire; after ' +
              'ML_BATCH_MAX_ATTEMPTS expired claims the take is given up (failed) and not offered again.',
            contentType: 'application/json',
            payload: schema(RecordingFinalized),
          },
        },
      },
    },
    operations: {
      sendFrames: {
        action: 'send',
        channel: { $ref: '#/channels/audio' },
        summary: 'core → ML: audio, and rejections',
        messages: [ref('AudioFrame'), ref('Rejected')],
      },
      receiveHealth: {
        action: 'receive',
        channel: { $ref: '#/channels/audio' },
        summary: 'ML → core: health of the session',
        messages: [ref('Warning'), ref('Dropped')],
      },
      offerTake: {
        action: 'send',
        channel: { $ref: '#/channels/recordingFinalized' },
        summary: 'core → ML: recording.finalized',
        messages: [{ $ref: '#/channels/recordingFinalized/messages/RecordingFinalized' }],
      },
    },
  };
}

export function recordingFinalizedSchema() {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: ML_CONTRACT_PATHS.recordingFinalized,
    title: 'recording.finalized',
    ...jsonSchema(RecordingFinalized, 'draft-2020-12'),
  };
}

/** The three documents by path, for the servers that publish them. */
export function mlContractDocuments(): Record<string, unknown> {
  return {
    [ML_CONTRACT_PATHS.openapi]: mlOpenApiDocument(),
    [ML_CONTRACT_PATHS.asyncapi]: mlAsyncApiDocument(),
    [ML_CONTRACT_PATHS.recordingFinalized]: recordingFinalizedSchema(),
  };
}
