// The spec's "Resources and their fields" written down as data, for test/schema.test.ts.
// A column is "name type [required] [= default]"; types as Postgres prints them
// (timestamptz abbreviated). "user" is the table app_user ("user" is reserved).

export const TABLES: Record<string, string[]> = {
  app_user: ['id uuid required = gen_random_uuid()', 'username text required', 'email text required', 'identity_id text', 'person_id uuid', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()'],
  person: [
    'id uuid required = gen_random_uuid()', 'user_id uuid required', 'display_name text required',
    'full_name text', 'title text', 'role text', 'email text', 'company text', 'tags jsonb',
    "voice_model_status text required = 'untrained'", 'voice_confidence numeric', 'voice_vector vector(192)',
    // internal: how many segment embeddings built voice_vector (weights refinement)
    'voice_sample_count integer required = 0',
    'created_at timestamptz required = now()', 'updated_at timestamptz required = now()',
  ],
  person_summary: ['id uuid required = gen_random_uuid()', 'person_id uuid required', 'author_id uuid required', 'summary text required', 'context jsonb', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()'],
  tag: ['id uuid required = gen_random_uuid()', 'user_id uuid required', 'name text required', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()'],
  meeting: [
    'id uuid required = gen_random_uuid()', 'user_id uuid required', 'title text required', 'source_type meeting_source_type required',
    'start_time timestamptz required', 'end_time timestamptz', 'summary text', 'key_points jsonb', 'headline text', 'deleted_at timestamptz',
    'created_at timestamptz required = now()',
    // internal: generated full-text vector for GET /search
    'title_search tsvector',
  ],
  meeting_audio_file: ['meeting_id uuid required', 'storage_path text required', 'created_at timestamptz required = now()'],
  meeting_attendee: ['meeting_id uuid required', 'person_id uuid required'],
  transcription: [
    'id uuid required = gen_random_uuid()', 'meeting_id uuid required', 'status text required', 'status_message text',
    'is_degraded boolean required = false', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()',
  ],
  transcription_status_history: ['id uuid required = gen_random_uuid()', 'transcription_id uuid required', 'status text required', 'status_message text', 'created_at timestamptz required = now()'],
  transcript_segment: [
    'id uuid required = gen_random_uuid()', 'transcription_id uuid', 'person_id uuid', 'speaker_label text', 'text text required',
    'start_ms numeric required', 'end_ms numeric required = 0', 'confidence numeric required = 0', 'is_final boolean required = true',
    'is_highlighted boolean required = false', 'feature_vector vector(192)',
    // internal: generated full-text vector for GET /search, and the owner it is searched by
    'text_search tsvector', 'user_id uuid',
  ],
  segment_manifest: [
    'id uuid required = gen_random_uuid()', 'meeting_id uuid required', 'audio_version integer required = 1',
    'start_sequence bigint required', 'end_sequence bigint required', 'started_at_ms bigint required', 'duration_ms bigint required',
    'object_name text required', 'object_generation bigint', 'byte_count bigint required', 'crc32c text required', 'sha256 text',
    'created_at timestamptz required = now()',
  ],
  meeting_speaker_label: ['meeting_id uuid required', 'speaker_label text required', 'person_id uuid required', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()'],
  recording_event_history: ['id uuid required = gen_random_uuid()', 'seq bigint required = identity', 'meeting_id uuid required', 'event_type text required', 'payload jsonb', 'created_at timestamptz required = clock_timestamp()'],
  topic: ['id uuid required = gen_random_uuid()', 'meeting_id uuid required', 'name text required', 'summary text required', 'is_final boolean required = false', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()'],
  topic_segment: ['id uuid required = gen_random_uuid()', 'topic_id uuid required', 'segment_id uuid required', 'created_at timestamptz required = now()'],
  talking_point: ['id uuid required = gen_random_uuid()', 'meeting_id uuid required', 'topic_id uuid', 'content text required', 'is_final boolean required = false', 'created_at timestamptz required = now()', 'deleted_at timestamptz', 'content_search tsvector'],
  talking_point_segment: ['talking_point_id uuid required', 'segment_id uuid required'],
  task: [
    'id uuid required = gen_random_uuid()', 'user_id uuid required', 'content text required', "status text required = 'pending'",
    "source task_source required = 'system'", 'due_date date', 'assigned_to uuid', 'meeting_id uuid', 'parent_task_id uuid',
    'deleted_at timestamptz', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()',
  ],
  sub_task: [
    'id uuid required = gen_random_uuid()', 'task_id uuid required', 'content text required', "status text required = 'pending'",
    'assigned_to uuid', 'due_date date', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()',
  ],
  note: ['id uuid required = gen_random_uuid()', 'user_id uuid required', 'content text required', 'subject_type text', 'subject_id uuid', 'tags jsonb', 'created_at timestamptz required = now()', 'updated_at timestamptz required = now()', 'content_search tsvector'],
  ai_thread: ['id uuid required = gen_random_uuid()', 'user_id uuid required', 'context_type text', 'context_id uuid', 'deleted_at timestamptz', 'created_at timestamptz required = now()'],
  chat_message: ['id uuid required = gen_random_uuid()', 'thread_id uuid required', 'role text required', 'content text required', 'tool_calls jsonb', 'deleted_at timestamptz', 'created_at timestamptz required = now()'],
  // Internal tables of the design.
  idempotency_record: [
    'principal text required', 'key uuid required', 'method text required', 'path text required', 'request_hash text required', 'state text required',
    'response_status integer', 'response_body jsonb', 'response_headers jsonb', 'response_raw text', 'created_at timestamptz required = now()', 'expires_at timestamptz required',
  ],
  event_sequence: ['user_id uuid required', 'last_seq bigint required = 0'],
  event_outbox: [
    'id uuid required = gen_random_uuid()', 'user_id uuid required', 'seq bigint required', 'event_type text required', 'payload jsonb required',
    'origin_client_id uuid', 'trace_context jsonb', 'created_at timestamptz required = clock_timestamp()', 'published_at timestamptz',
  ],
  recording: [
    'meeting_id uuid required', 'audio_version integer required', 'transcription_id uuid', 'state text required', 'encoding text required',
    'sample_rate integer required = 16000', 'max_duration_seconds integer required', 'started_at timestamptz required = now()', 'stopped_at timestamptz',
    'stop_reason text', 'gap_upload_deadline timestamptz', 'finalized_at timestamptz', 'owner_instance text',
    'created_at timestamptz required = now()', 'updated_at timestamptz required = now()', 'trace_context jsonb',
  ],
};

/** Every reference: "table.column -> parent: rule", rule as the spec words it. */
export const REFERENCES = [
  'app_user.person_id -> person: SET NULL',
  'person.user_id -> app_user: CASCADE',
  'person_summary.person_id -> person: CASCADE',
  'person_summary.author_id -> app_user: CASCADE',
  'tag.user_id -> app_user: CASCADE',
  'meeting.user_id -> app_user: CASCADE',
  'meeting_audio_file.meeting_id -> meeting: CASCADE',
  'meeting_attendee.meeting_id -> meeting: CASCADE',
  'meeting_attendee.person_id -> person: CASCADE',
  'transcription.meeting_id -> meeting: CASCADE',
  'transcription_status_history.transcription_id -> transcription: CASCADE',
  'transcript_segment.transcription_id -> transcription: CASCADE',
  'transcript_segment.person_id -> person: SET NULL',
  'segment_manifest.meeting_id -> meeting: CASCADE',
  'meeting_speaker_label.meeting_id -> meeting: CASCADE',
  'meeting_speaker_label.person_id -> person: CASCADE',
  'recording_event_history.meeting_id -> meeting: CASCADE',
  'topic.meeting_id -> meeting: CASCADE',
  'topic_segment.topic_id -> topic: CASCADE',
  'talking_point.meeting_id -> meeting: CASCADE',
  'talking_point.topic_id -> topic: SET NULL',
  'talking_point_segment.talking_point_id -> talking_point: CASCADE',
  'task.user_id -> app_user: CASCADE',
  'task.assigned_to -> person: SET NULL',
  'task.meeting_id -> meeting: SET NULL',
  'task.parent_task_id -> task: CASCADE',
  'sub_task.task_id -> task: CASCADE',
  'sub_task.assigned_to -> person: SET NULL',
  'note.user_id -> app_user: CASCADE',
  'ai_thread.user_id -> app_user: CASCADE',
  'chat_message.thread_id -> ai_thread: CASCADE',
  'event_sequence.user_id -> app_user: CASCADE',
  'event_outbox.user_id -> app_user: CASCADE',
  'recording.meeting_id -> meeting: CASCADE',
  'recording.transcription_id -> transcription: SET NULL',
];

/** Indexes the API's queries need: "table (columns as pg_indexes prints them) [where ...]". */
export const QUERY_INDEXES = [
  'meeting (user_id, start_time DESC, id) WHERE (deleted_at IS NULL)',
  'person (user_id, display_name)',
  'person USING hnsw (voice_vector vector_cosine_ops)',
  'task (user_id, created_at)',
  'task (meeting_id)',
  'task (parent_task_id)',
  'task (assigned_to)',
  'transcript_segment (transcription_id, start_ms)',
  'transcript_segment (transcription_id, speaker_label)',
  'transcription (meeting_id)',
  'talking_point (meeting_id)',
  'topic (meeting_id)',
  'note (user_id)',
  'note (subject_type, subject_id)',
  'ai_thread (user_id)',
  'chat_message (thread_id, created_at)',
  'segment_manifest (meeting_id, audio_version, start_sequence',
  'recording_event_history (meeting_id, seq DESC)',
  'idempotency_record (expires_at)',
  'event_outbox (user_id, seq)',
  'event_outbox (created_at) WHERE (published_at IS NULL)',
  'recording (state, gap_upload_deadline)',
  // GET /search
  'meeting USING gin (user_id, title_search) WHERE (deleted_at IS NULL)',
  'transcript_segment USING gin (user_id, text_search)',
  'talking_point USING gin (content_search) WHERE (deleted_at IS NULL)',
  'note USING gin (user_id, content_search)',
];
