// The core service's client: REST (generated types, openapi-fetch) and the live WebSocket.
export { createRestClient, type RestClient, type RestClientOptions } from './rest.js';
export { ApiProblem, ok, problemOf } from './problem.js';
export { retryAfterMs, DEFAULT_RETRY, type RetryOptions } from './retry.js';
export { newTraceparent, type TraceHeaders } from './trace.js';
export { uploadGap, contentDigest } from './gap-upload.js';
export type { paths, components, operations } from './schema.js';
export {
  LiveConnection,
  type ConnectionStatus,
  type ConnectionListener,
  type LiveConnectionOptions,
  type WebSocketConstructor,
  type WebSocketLike,
} from './live/connection.js';
export {
  LiveRecording,
  type LiveRecordingOptions,
  type RecordingPhase,
  type RecordingSnapshot,
  type GapUpload,
} from './live/recording.js';
export { encodeFrame, FrameStore, inRanges, rangeFrames, toRanges, FRAME_BYTES, FRAME_MS } from './live/frames.js';
export { backoffDelay, BACKOFF_BASE_MS, BACKOFF_MAX_MS } from './live/backoff.js';
export type * from './live/messages.js';
