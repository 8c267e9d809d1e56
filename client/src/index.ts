// The core service's client: REST (generated types, openapi-fetch) and the live WebSocket.
export { createRestClient, type RestClient, type RestClientOptions } from './rest';
export { ApiProblem, ok, problemOf } from './problem';
export { retryAfterMs, DEFAULT_RETRY, type RetryOptions } from './retry';
export { newTraceparent, type TraceHeaders } from './trace';
export { uploadGap, contentDigest } from './gap-upload';
export type { paths, components, operations } from './schema';
export { LiveConnection, type ConnectionStatus, type ConnectionListener, type LiveConnectionOptions, type WebSocketConstructor, type WebSocketLike } from './live/connection';
export { LiveRecording, type LiveRecordingOptions, type RecordingPhase, type RecordingSnapshot, type GapUpload } from './live/recording';
export { encodeFrame, FrameStore, inRanges, rangeFrames, toRanges, FRAME_BYTES, FRAME_MS } from './live/frames';
export { backoffDelay, BACKOFF_BASE_MS, BACKOFF_MAX_MS } from './live/backoff';
export type * from './live/messages';
