// The WebSocket protocol as an AsyncAPI 3 document, generated from the schemas the service itself
// validates and sends with: the client commands (protocol.ts), the server messages
// (server-messages.ts) and the events (lib/events/catalogue.ts). Served at GET /asyncapi.json.
import { z } from 'zod';
import { deliveredEventSchemas } from '@mi/lib/events/catalogue';
import { Hello, ResumeRecording, StartRecording, StopRecording } from './protocol';
import { ServerMessageSchemas } from './server-messages';

// AsyncAPI's default schema format is a superset of JSON Schema draft 7.
const schemaOf = (schema: z.ZodType) => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, {
    target: 'draft-7',
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return json;
};

const clientMessages: Record<string, { schema: z.ZodType; summary: string }> = {
  hello: {
    schema: Hello,
    summary: 'The first message: the user token, a client id and optionally last_seq to replay events after.',
  },
  StartRecordingCommand: {
    schema: StartRecording,
    summary: 'Starts a new take of a recording meeting (answered by RecordingStarted).',
  },
  ResumeRecordingCommand: {
    schema: ResumeRecording,
    summary: 'Takes over an open take on this connection (answered by RecordingResumed).',
  },
  StopRecordingCommand: {
    schema: StopRecording,
    summary:
      'Stops the take (RecordingStopped follows after the settle time). Sent again after the take stopped, it is answered with its RecordingStopped.',
  },
};

export function asyncApiDocument(opts: { host: string; protocol: 'ws' | 'wss' }) {
  const messages: Record<string, unknown> = {};
  const send: { $ref: string }[] = [];
  const receive: { $ref: string }[] = [];
  const add = (
    name: string,
    summary: string,
    payload: Record<string, unknown>,
    into: { $ref: string }[],
    contentType = 'application/json',
  ) => {
    messages[name] = { name, summary, contentType, payload };
    into.push({ $ref: `#/channels/live/messages/${name}` });
  };
  for (const [name, m] of Object.entries(clientMessages)) add(name, m.summary, schemaOf(m.schema), send);
  add(
    'AudioFrame',
    'A binary frame: 8 bytes big-endian unsigned sequence number, then 100 ms of audio (at most LIVE_MAX_FRAME_BYTES).',
    { type: 'string', format: 'binary' },
    send,
    'application/octet-stream',
  );
  for (const [name, schema] of Object.entries(ServerMessageSchemas))
    add(name, schema.description ?? name, schemaOf(schema), receive);
  for (const [name, schema] of deliveredEventSchemas())
    add(name, schema.description ?? name, schemaOf(schema), receive);

  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Meeting Intelligence live service',
      version: '1.0.0',
      description:
        'The WebSocket protocol of GET /ws: hello and event replay, live recording commands and audio frames, acknowledgements through AudioStoredProgressEvent, errors and close codes (docs/websocket.md).',
    },
    servers: { live: { host: opts.host, protocol: opts.protocol, pathname: '/ws', description: 'the live service' } },
    channels: { live: { address: '/ws', messages } },
    operations: {
      sendToServer: {
        action: 'receive',
        channel: { $ref: '#/channels/live' },
        summary: 'What a client sends: hello, recording commands, audio frames.',
        messages: send,
      },
      sendToClient: {
        action: 'send',
        channel: { $ref: '#/channels/live' },
        summary: 'What the server sends: answers, events, errors.',
        messages: receive,
      },
    },
  };
}
