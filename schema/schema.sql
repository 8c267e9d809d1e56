-- The single declarative target state of the core service's database.
-- `npm run db:apply` diffs a live database against this file and applies the difference;
-- never write migrations by hand. Field names, types and delete rules follow the spec's
-- "Resources and their fields"; internal tables the design needs are at the end.
-- decimal fields are numeric (exact, as the spec says); the pg type parser turns them
-- into JSON numbers at the repository edge.

CREATE EXTENSION IF NOT EXISTS vector;
-- GIN indexes over (user_id, tsvector) for GET /search: one index scan per user and word.
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TYPE task_source AS ENUM ('user', 'system');
CREATE TYPE meeting_source_type AS ENUM ('recording', 'upload', 'text', 'anecdotal');

-- The spec's "user" resource. "user" is a reserved word in Postgres, so the table is
-- app_user; the API still calls the resource user.
CREATE TABLE app_user (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  username text NOT NULL,
  email text NOT NULL,
  identity_id text,
  person_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT app_user_identity_id_key UNIQUE (identity_id)
);
-- guard: user-email-unique | remove: UNIQUE | test: test/security/identities.test.ts :: a look-alike is 409
-- Email is unique NFKC-normalised, trimmed and case-insensitively: ALICE@example.test, a
-- full-width ａｌｉｃｅ@example.test and "alice@example.test " are alice@example.test.
CREATE UNIQUE INDEX app_user_email_key ON app_user (lower(btrim(normalize(email, NFKC))));

CREATE TABLE person (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  display_name text NOT NULL,
  full_name text,
  title text,
  role text,
  email text,
  company text,
  tags jsonb,
  voice_model_status text NOT NULL DEFAULT 'untrained'
    CONSTRAINT person_voice_model_status_check CHECK (voice_model_status IN ('untrained', 'training', 'ready')),
  voice_confidence numeric,
  voice_vector vector(192),
  -- Internal: the person's voice samples (voice_sample) as a running sum of their L2-normalised
  -- embeddings and their count. voice_vector = normalise(voice_sum), voice_confidence =
  -- |voice_sum| / count; samples added are added to the sum, removals recount it from the rows.
  voice_sum vector(192),
  voice_sample_count integer NOT NULL DEFAULT 0,
  -- A display_name the user already has answers 409. (Not last, so that its line can go.)
  -- guard: person-display-name-unique | remove: CONSTRAINT person_user_id_display_name_key UNIQUE (user_id, display_name), | test: test/api/people.test.ts :: display_name the user already has
  CONSTRAINT person_user_id_display_name_key UNIQUE (user_id, display_name),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The unique (user_id, display_name) index also serves user-scoped listing by name.
-- m and ef_construction above pgvector's defaults (16, 64): on 100,000 random 192-dimension
-- vectors, at the highest ef_search (1000), the default graph finds 84% of the true top 10 and
-- this one 99.7%.
CREATE INDEX person_voice_vector_idx ON person USING hnsw (voice_vector vector_cosine_ops) WITH (m = 32, ef_construction = 200);

-- Circular with person.user_id, so added once both tables exist.
ALTER TABLE app_user ADD CONSTRAINT app_user_person_id_fkey
  FOREIGN KEY (person_id) REFERENCES person (id) ON DELETE SET NULL;
CREATE INDEX app_user_person_id_idx ON app_user (person_id);

CREATE TABLE person_summary (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  author_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  summary text NOT NULL,
  context jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Lists in creation order walk (owner, created_at, id) (lib/domain/pagination.ts).
CREATE INDEX person_summary_person_id_created_at_idx ON person_summary (person_id, created_at, id);
CREATE INDEX person_summary_author_id_idx ON person_summary (author_id);

CREATE TABLE tag (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- Tag names are unique per user (a duplicate answers 409); also the index of the tenant scope.
  -- guard: tag-name-unique | remove: CONSTRAINT tag_user_id_name_key UNIQUE (user_id, name), | test: test/api/tags.test.ts :: tag name the user already has
  CONSTRAINT tag_user_id_name_key UNIQUE (user_id, name),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE meeting (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  title text NOT NULL,
  source_type meeting_source_type NOT NULL,
  start_time timestamptz NOT NULL,
  end_time timestamptz,
  summary text,
  key_points jsonb,
  headline text,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- GET /search. A title stands for the whole meeting, so it weighs most (A). Kept by the trigger
  -- below, not a generated column: adding one rewrites the table under an exclusive lock (see
  -- docs/deployment.md, "Schema upgrades"), a plain column is added at once and backfilled in batches.
  title_search tsvector
);
CREATE FUNCTION meeting_set_title_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.title_search := setweight(to_tsvector('english', NEW.title), 'A');
  RETURN NEW;
END
$$;
CREATE TRIGGER meeting_set_title_search BEFORE INSERT OR UPDATE OF title ON meeting
  FOR EACH ROW EXECUTE FUNCTION meeting_set_title_search();
-- GET /search: titles of live meetings, per user.
CREATE INDEX meeting_user_id_title_search_idx ON meeting USING gin (user_id, title_search) WHERE deleted_at IS NULL;
-- Listing: newest first with a (start_time, id) keyset cursor, live rows only.
CREATE INDEX meeting_user_id_start_time_idx ON meeting (user_id, start_time DESC, id) WHERE deleted_at IS NULL;
-- The partial index above skips soft-deleted rows; the user cascade needs every row.
CREATE INDEX meeting_user_id_idx ON meeting (user_id);
-- The sweep's purge: soft-deleted meetings, oldest deletion first.
CREATE INDEX meeting_deleted_at_idx ON meeting (deleted_at) WHERE deleted_at IS NOT NULL;

CREATE TABLE meeting_audio_file (
  meeting_id uuid PRIMARY KEY REFERENCES meeting (id) ON DELETE CASCADE,
  storage_path text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE meeting_attendee (
  -- A repeated PUT of an attendee adds nothing (ON CONFLICT DO NOTHING).
  -- guard: attendee-once | remove: PRIMARY KEY (meeting_id, person_id), | test: test/api/attendees.test.ts :: add attendees idempotently
  PRIMARY KEY (meeting_id, person_id),
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE
);
CREATE INDEX meeting_attendee_person_id_idx ON meeting_attendee (person_id);

CREATE TABLE transcription (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  status text NOT NULL
    CONSTRAINT transcription_status_check CHECK (status IN ('pending', 'transcribing', 'synthesizing', 'completed', 'failed')),
  status_message text,
  is_degraded boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- The batch pass's claim (decisions.md section 8): a lease the ML renews, the fencing token its
  -- writes carry (ML-Claim), and how many claims expired (the sweep re-offers the take until
  -- ML_BATCH_MAX_ATTEMPTS). Plain nullable columns and a constant default: added without a rewrite.
  claim_id uuid,
  claim_expires_at timestamptz,
  claim_expirations integer NOT NULL DEFAULT 0
);
CREATE INDEX transcription_meeting_id_idx ON transcription (meeting_id);
-- The sweep's look for lapsed claims: only the (few) transcriptions being synthesized.
CREATE INDEX transcription_claim_expires_at_idx ON transcription (claim_expires_at) WHERE status = 'synthesizing';

-- Append-only audit of transcription status changes.
CREATE TABLE transcription_status_history (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  transcription_id uuid NOT NULL REFERENCES transcription (id) ON DELETE CASCADE,
  status text NOT NULL
    CONSTRAINT transcription_status_history_status_check CHECK (status IN ('pending', 'transcribing', 'synthesizing', 'completed', 'failed')),
  status_message text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transcription_status_history_transcription_id_idx ON transcription_status_history (transcription_id, created_at);

CREATE TABLE transcript_segment (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  transcription_id uuid REFERENCES transcription (id) ON DELETE CASCADE,
  person_id uuid REFERENCES person (id) ON DELETE SET NULL,
  speaker_label text,
  text text NOT NULL,
  start_ms numeric NOT NULL,
  end_ms numeric NOT NULL DEFAULT 0,
  confidence numeric NOT NULL DEFAULT 0,
  is_final boolean NOT NULL DEFAULT true,
  is_highlighted boolean NOT NULL DEFAULT false,
  feature_vector vector(192),
  -- GET /search ('english': stemmed, stop words dropped; see lib/repositories/search.ts).
  -- Kept by the trigger below (as meeting.title_search).
  text_search tsvector,
  -- Internal: the meeting's owner, set by the trigger below, so search scans one user's
  -- segments in the index instead of every user's matches in the heap.
  user_id uuid
-- Free space on each page so relabelling a speaker (a person_id change) is a HOT update.
) WITH (fillfactor = 70);
CREATE INDEX transcript_segment_transcription_id_start_ms_idx ON transcript_segment (transcription_id, start_ms);
CREATE INDEX transcript_segment_transcription_id_speaker_label_idx ON transcript_segment (transcription_id, speaker_label);
-- For the person's ON DELETE SET NULL. A summarizing (BRIN) index does not stop HOT updates of
-- person_id (PostgreSQL 16+), which a btree would, halving the cost of a relabel; bloom answers
-- equality per range of 16 pages; autosummarize summarizes new ranges (until then they are scanned).
CREATE INDEX transcript_segment_user_id_text_search_idx ON transcript_segment USING gin (user_id, text_search);

-- transcript_segment.user_id follows the transcription's meeting (whose owner never changes), on
-- insert only: no code moves a segment to another transcription. text_search follows the text.
-- Every insert path gets both, the raw ones of tests and tools included; one trigger, not two,
-- as each row's trigger call costs. UPDATE OF text: a speaker relabel does not fire it.
CREATE FUNCTION transcript_segment_derive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.user_id := (SELECT m.user_id FROM transcription t JOIN meeting m ON m.id = t.meeting_id
                    WHERE t.id = NEW.transcription_id);
  END IF;
  NEW.text_search := to_tsvector('english', NEW.text);
  RETURN NEW;
END
$$;
CREATE TRIGGER transcript_segment_derive BEFORE INSERT OR UPDATE OF text ON transcript_segment
  FOR EACH ROW EXECUTE FUNCTION transcript_segment_derive();
CREATE INDEX transcript_segment_person_id_idx ON transcript_segment USING brin (person_id uuid_bloom_ops) WITH (pages_per_range = 16, autosummarize = on);

-- One row per stored audio object of a live recording (inclusive frame range).
-- Partitioned by month of created_at (decision 0010): a read by take names no time, so it probes
-- every month kept (a day's partitions would be 30 times as many); the live commit's read names
-- the take's creation and skips the months before it. Keys must hold the partition key: a range
-- stays unique because every writer of a take holds its row lock and reads before it inserts
-- (lib/repositories/manifest.ts).
CREATE TABLE segment_manifest (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  audio_version integer NOT NULL DEFAULT 1,
  start_sequence bigint NOT NULL,
  end_sequence bigint NOT NULL,
  started_at_ms bigint NOT NULL,
  duration_ms bigint NOT NULL,
  object_name text NOT NULL,
  object_generation bigint,
  byte_count bigint NOT NULL,
  crc32c text NOT NULL,
  sha256 text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT segment_manifest_pkey PRIMARY KEY (id, created_at),
  CONSTRAINT segment_manifest_range_key UNIQUE (meeting_id, audio_version, start_sequence, end_sequence, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE segment_manifest_default PARTITION OF segment_manifest DEFAULT;
-- The unique key's leading columns (meeting_id, audio_version, start_sequence) serve the
-- contiguity scan and the meeting cascade, in each partition.

CREATE TABLE meeting_speaker_label (
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  speaker_label text NOT NULL,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (meeting_id, speaker_label)
);
CREATE INDEX meeting_speaker_label_person_id_idx ON meeting_speaker_label (person_id);

-- Voice samples (decisions.md section 6): one row per segment whose embedding shapes a person's
-- voice, i.e. every segment attributed to a person with a non-zero feature_vector. The embedding
-- is stored L2-normalised. Written only by lib/repositories/voice-samples.ts, which keeps the person's
-- voice_sum in step in the same transaction; the delete rules below are a backstop (a person's
-- samples go with the person; meeting purge and erasure call removeMeetingVoiceSamples first).
CREATE TABLE voice_sample (
  segment_id uuid PRIMARY KEY REFERENCES transcript_segment (id) ON DELETE CASCADE,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  speaker_label text,
  embedding vector(192) NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- GET /people/{id}/voice-samples (newest first) and the recount of a person's sum.
CREATE INDEX voice_sample_person_id_created_at_idx ON voice_sample (person_id, created_at DESC, segment_id DESC);
CREATE INDEX voice_sample_meeting_id_idx ON voice_sample (meeting_id);

-- Append-only diagnostics trail; seq orders rows that share a created_at.
CREATE TABLE recording_event_history (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq bigint GENERATED ALWAYS AS IDENTITY,
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  event_type text NOT NULL,
  payload jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX recording_event_history_meeting_id_seq_idx ON recording_event_history (meeting_id, seq DESC);

CREATE TABLE topic (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  name text NOT NULL,
  summary text NOT NULL,
  is_final boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX topic_meeting_id_idx ON topic (meeting_id);

-- segment_id has no foreign key: batch rebuilds replace segments wholesale.
CREATE TABLE topic_segment (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  topic_id uuid NOT NULL REFERENCES topic (id) ON DELETE CASCADE,
  segment_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX topic_segment_topic_id_idx ON topic_segment (topic_id);

CREATE TABLE talking_point (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  topic_id uuid REFERENCES topic (id) ON DELETE SET NULL,
  content text NOT NULL,
  is_final boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  -- GET /search. A talking point sums up part of a meeting: it weighs above its words (B).
  -- Kept by the trigger below (as meeting.title_search).
  content_search tsvector
);
CREATE FUNCTION talking_point_set_content_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.content_search := setweight(to_tsvector('english', NEW.content), 'B');
  RETURN NEW;
END
$$;
CREATE TRIGGER talking_point_set_content_search BEFORE INSERT OR UPDATE OF content ON talking_point
  FOR EACH ROW EXECUTE FUNCTION talking_point_set_content_search();
CREATE INDEX talking_point_meeting_id_idx ON talking_point (meeting_id);
CREATE INDEX talking_point_content_search_idx ON talking_point USING gin (content_search) WHERE deleted_at IS NULL;
CREATE INDEX talking_point_topic_id_idx ON talking_point (topic_id);

-- segment_id has no foreign key: batch rebuilds replace segments wholesale.
CREATE TABLE talking_point_segment (
  talking_point_id uuid NOT NULL REFERENCES talking_point (id) ON DELETE CASCADE,
  segment_id uuid NOT NULL,
  PRIMARY KEY (talking_point_id, segment_id)
);

CREATE TABLE task (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  content text NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CONSTRAINT task_status_check CHECK (status IN ('pending', 'completed')),
  source task_source NOT NULL DEFAULT 'system',
  due_date date,
  assigned_to uuid REFERENCES person (id) ON DELETE SET NULL,
  meeting_id uuid REFERENCES meeting (id) ON DELETE SET NULL,
  parent_task_id uuid REFERENCES task (id) ON DELETE CASCADE,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX task_user_id_created_at_idx ON task (user_id, created_at, id);
CREATE INDEX task_meeting_id_idx ON task (meeting_id);
CREATE INDEX task_parent_task_id_idx ON task (parent_task_id);
CREATE INDEX task_assigned_to_idx ON task (assigned_to);

-- Legacy; kept because the spec still lists it.
CREATE TABLE sub_task (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id uuid NOT NULL REFERENCES task (id) ON DELETE CASCADE,
  content text NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CONSTRAINT sub_task_status_check CHECK (status IN ('pending', 'completed')),
  assigned_to uuid REFERENCES person (id) ON DELETE SET NULL,
  due_date date,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sub_task_task_id_created_at_idx ON sub_task (task_id, created_at, id);
CREATE INDEX sub_task_assigned_to_idx ON sub_task (assigned_to);

-- subject_id is polymorphic (a person or a meeting), so it has no foreign key.
CREATE TABLE note (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  content text NOT NULL,
  subject_type text
    CONSTRAINT note_subject_type_check CHECK (subject_type IN ('PERSON', 'MEETING')),
  subject_id uuid,
  tags jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- GET /search. Kept by the trigger below (as meeting.title_search).
  content_search tsvector
);
CREATE FUNCTION note_set_content_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.content_search := to_tsvector('english', NEW.content);
  RETURN NEW;
END
$$;
CREATE TRIGGER note_set_content_search BEFORE INSERT OR UPDATE OF content ON note
  FOR EACH ROW EXECUTE FUNCTION note_set_content_search();
CREATE INDEX note_user_id_created_at_idx ON note (user_id, created_at, id);
CREATE INDEX note_user_id_content_search_idx ON note USING gin (user_id, content_search);
CREATE INDEX note_subject_type_subject_id_idx ON note (subject_type, subject_id);

-- context_id is polymorphic (a person or a meeting), so it has no foreign key.
CREATE TABLE ai_thread (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  context_type text
    CONSTRAINT ai_thread_context_type_check CHECK (context_type IN ('PERSON', 'MEETING')),
  context_id uuid,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ai_thread_user_id_created_at_idx ON ai_thread (user_id, created_at, id);

CREATE TABLE chat_message (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  thread_id uuid NOT NULL REFERENCES ai_thread (id) ON DELETE CASCADE,
  role text NOT NULL
    CONSTRAINT chat_message_role_check CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  content text NOT NULL,
  tool_calls jsonb,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_message_thread_id_created_at_idx ON chat_message (thread_id, created_at, id);

-- ---------------------------------------------------------------------------------------
-- Internal tables (not resources of the spec).

-- Idempotency-Key records, written in the same transaction as the effect. principal is
-- the user id, or 'service' for service credentials. Rows expire after 24 h.
CREATE TABLE idempotency_record (
  principal text NOT NULL,
  key uuid NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  request_hash text NOT NULL,
  state text NOT NULL
    CONSTRAINT idempotency_record_state_check CHECK (state IN ('in_flight', 'done')),
  response_status integer,
  -- Records written before response_raw existed (kept until they expire, at most 24 h).
  response_body jsonb,
  response_headers jsonb,
  -- The first response's exact body: a replay sends these bytes, not a re-serialisation.
  response_raw text,
  -- One claim per key: the idempotency middleware's insert gets through once.
  -- guard: idempotency-claim | remove: PRIMARY KEY (principal, key), | test: test/concurrency/rest.test.ts :: one effect for one Idempotency-Key fired 20 times
  PRIMARY KEY (principal, key),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX idempotency_record_expires_at_idx ON idempotency_record (expires_at);

-- Per-user event counter: the seq every WebSocket event of that user carries. routes_version:
-- bumped by each WebSocket hello; an api instance's cached routes hold while it is unchanged
-- (lib/events/route-cache.ts).
CREATE TABLE event_sequence (
  user_id uuid PRIMARY KEY REFERENCES app_user (id) ON DELETE CASCADE,
  last_seq bigint NOT NULL DEFAULT 0,
  routes_version bigint NOT NULL DEFAULT 0
);

-- Transactional outbox: events written with their change, published to Pub/Sub after
-- commit (the sweep republishes leftovers) and replayed to reconnecting clients.
-- Partitioned by day of created_at (decision 0010): retention drops a day's partition instead of
-- deleting its rows; lib/repositories/partitions.ts creates them ahead, and the default partition
-- takes any row no day's partition covers. Keys must hold the partition key: (user_id, seq) stays
-- unique because seq comes from the user's event_sequence row, locked and incremented per event.
CREATE TABLE event_outbox (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  event_type text NOT NULL,
  payload jsonb NOT NULL,
  origin_client_id uuid,
  trace_context jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at timestamptz,
  CONSTRAINT event_outbox_pkey PRIMARY KEY (id, created_at),
  CONSTRAINT event_outbox_user_id_seq_key UNIQUE (user_id, seq, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT;
CREATE INDEX event_outbox_unpublished_idx ON event_outbox (created_at) WHERE published_at IS NULL;
-- Retention: the default partition's (and a held day's) rows are deleted by age.
CREATE INDEX event_outbox_created_at_idx ON event_outbox (created_at);
-- The sweep keeps the tables' partitions (lib/repositories/partitions.ts: the outbox's days, the
-- manifest's months) without owning them: attaching and dropping a partition take the owner's
-- rights, so these two run with them and do only that. Only the sweep's role may call them
-- (schema/roles.ts). A new partition is the sweep's alone to read and delete directly (retention);
-- every other role reaches rows through the parent and its policy.
CREATE FUNCTION partition_unit(tbl text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE tbl WHEN 'event_outbox' THEN 'day' WHEN 'segment_manifest' THEN 'month' END
$$;
CREATE FUNCTION attach_partition(tbl text, day date) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
DECLARE
  unit text := partition_unit(tbl);
  from_ts timestamp := date_trunc(unit, day::timestamp);
  part text := tbl || '_p' || to_char(from_ts, CASE unit WHEN 'day' THEN 'YYYYMMDD' ELSE 'YYYYMM' END);
BEGIN
  IF unit IS NULL THEN
    RAISE EXCEPTION 'not a table partitioned by time: %', tbl;
  END IF;
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I (LIKE %I INCLUDING DEFAULTS)', part, tbl);
  -- Bounds are UTC: the period's arithmetic is done before the zone (a month is not 30 days).
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', tbl, part,
    from_ts AT TIME ZONE 'UTC', (from_ts + ('1 ' || unit)::interval) AT TIME ZONE 'UTC');
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mi_sweep') THEN
    EXECUTE format('GRANT SELECT, DELETE ON %I TO mi_sweep', part);
  END IF;
  RETURN part;
END $$;
-- A manifest partition is dropped only empty: its rows name stored audio (a meeting's purge deletes them).
CREATE FUNCTION drop_partition(tbl text, part text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
DECLARE
  filled boolean;
BEGIN
  IF partition_unit(tbl) IS NULL OR NOT EXISTS (
      SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = tbl::regclass AND c.relname = part AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT') THEN
    RAISE EXCEPTION 'not a time partition of %: %', tbl, part;
  END IF;
  IF tbl = 'segment_manifest' THEN
    -- no guard: the DROP takes this lock anyway; taken first, no row lands between the check and the drop.
    EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', part);
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', part) INTO filled;
    IF filled THEN
      -- guard: manifest-partition-empty | remove: RAISE EXCEPTION 'partition % holds rows', part; | test: test/sweep.test.ts :: refuse to drop a month holding rows
      RAISE EXCEPTION 'partition % holds rows', part;
    END IF;
  END IF;
  EXECUTE format('DROP TABLE %I', part);
END $$;

-- Webhook endpoints (decisions.md section 7). cursor_seq is the user's last outbox seq already
-- turned into deliveries: a user's seqs commit in order (event_sequence's row lock), so reading
-- past it never skips an event. lease_until: a delivery is in flight until then (one per
-- endpoint, which keeps seq order); once past, the last release (claims serve the least recently
-- served endpoint first). failing_since is the first failed attempt since the last success.
CREATE TABLE webhook (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  url text NOT NULL,
  event_types text[] NOT NULL,
  description text,
  secret text NOT NULL,
  -- After a rotation the replaced secret still signs (beside the new one) until this time.
  previous_secret text,
  previous_secret_expires_at timestamptz,
  enabled boolean NOT NULL DEFAULT true,
  cursor_seq bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_user_id_created_at_idx ON webhook (user_id, created_at, id);

-- Events waiting for delivery to one endpoint: the exact body signed on every attempt; the row
-- goes on success or when the retry schedule is used up.
CREATE TABLE webhook_delivery (
  webhook_id uuid NOT NULL REFERENCES webhook (id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  seq bigint NOT NULL,
  body text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX webhook_delivery_due_idx ON webhook_delivery (webhook_id, next_attempt_at, seq);

-- The delivery log: every attempt, kept 7 days (the sweep prunes it).
CREATE TABLE webhook_attempt (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  webhook_id uuid NOT NULL REFERENCES webhook (id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  attempt integer NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_attempt_webhook_id_idx ON webhook_attempt (webhook_id, attempted_at DESC, id DESC);
CREATE INDEX webhook_attempt_attempted_at_idx ON webhook_attempt (attempted_at);

-- Live recording state, one row per take (meeting, audio_version).
CREATE TABLE recording (
  meeting_id uuid NOT NULL REFERENCES meeting (id) ON DELETE CASCADE,
  audio_version integer NOT NULL,
  transcription_id uuid REFERENCES transcription (id) ON DELETE SET NULL,
  state text NOT NULL
    CONSTRAINT recording_state_check CHECK (state IN ('recording', 'stopping', 'stopped', 'finalizing', 'finalized')),
  encoding text NOT NULL
    CONSTRAINT recording_encoding_check CHECK (encoding IN ('pcm_s16le', 'webm_opus')),
  sample_rate integer NOT NULL DEFAULT 16000,
  max_duration_seconds integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  stopped_at timestamptz,
  stop_reason text
    CONSTRAINT recording_stop_reason_check CHECK (stop_reason IN ('user', 'max_duration', 'connection_closed')),
  gap_upload_deadline timestamptz,
  finalized_at timestamptz,
  owner_instance text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- W3C trace context of the client's start (traceparent, tracestate): the take's ML calls and
  -- its recording.finalized message continue that trace.
  trace_context jsonb,
  PRIMARY KEY (meeting_id, audio_version)
);
CREATE INDEX recording_state_gap_upload_deadline_idx ON recording (state, gap_upload_deadline);
CREATE INDEX recording_transcription_id_idx ON recording (transcription_id);

-- Account erasure requests (DELETE /me), written before anything is deleted so that a request
-- cut short is finished by the sweep. No foreign key: the user's rows go first, then the objects
-- under the meetings' prefixes (meeting_ids, filled as the rows are deleted); the request row is
-- deleted last, so a finished erasure leaves no row naming the user.
CREATE TABLE account_erasure (
  user_id uuid PRIMARY KEY,
  meeting_ids uuid[] NOT NULL DEFAULT '{}',
  rows_erased_at timestamptz,
  requested_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- People merged into another (POST /people/{id}/merge deletes the merged one): a write naming a
-- merged person is attributed to the person it was merged into (decisions.md section 8). Kept
-- flat: a later merge of person_id re-points its rows, so one lookup follows any chain.
CREATE TABLE person_merge (
  merged_id uuid PRIMARY KEY,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX person_merge_person_id_idx ON person_merge (person_id);
CREATE INDEX person_merge_user_id_idx ON person_merge (user_id);

-- Account exports (POST /me/exports, docs/exports.md): one ZIP of everything the user has, built
-- off the request by the sweep under a lease (lease_expires_at, renewed while the builder works;
-- `attempts` names the current claim, so a builder that lost its lease cannot finish the row).
-- The archive is at exports/{user_id}/{id}/{attempts}.zip; it and the row are deleted
-- ACCOUNT_EXPORT_RETENTION_HOURS after completed_at.
CREATE TABLE account_export (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES app_user (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending'
    CONSTRAINT account_export_status_check CHECK (status IN ('pending', 'running', 'ready', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  lease_expires_at timestamptz,
  storage_path text,
  byte_count bigint,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- One unfinished export per user: a second POST finds this index's conflict (409 invalid_state).
-- guard: account-export-one-unfinished | remove: UNIQUE | test: test/api/account-export.test.ts :: one unfinished export
CREATE UNIQUE INDEX account_export_unfinished_key ON account_export (user_id) WHERE status IN ('pending', 'running');
-- Listing, newest first.
CREATE INDEX account_export_user_id_created_at_idx ON account_export (user_id, created_at, id);
-- The sweep: exports to build (pending, or running with a lapsed lease) and finished ones past retention.
CREATE INDEX account_export_unfinished_idx ON account_export (created_at) WHERE status IN ('pending', 'running');
CREATE INDEX account_export_completed_at_idx ON account_export (completed_at) WHERE completed_at IS NOT NULL;

-- ===== Tenant isolation (issue 38, decisions.md section 8) =====
-- Every table holding a user's rows answers only to the unit of work's declared owner: a
-- transaction sets app.user_id (a user's work) or app.service (the ML, live, sweep and dispatcher
-- paths: any user's rows) with set_config(…, true); one that declared nothing sees nothing. FORCE
-- makes the policies bind the table owner too; only a superuser (never a service login) bypasses
-- them. Child tables without user_id answer through their parent, itself under its policy.
-- The roles and grants are not schema objects of this database: schema/roles.ts (db:apply).
CREATE FUNCTION app_is_service() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT coalesce(current_setting('app.service', true), '') <> ''
$$;
CREATE FUNCTION app_may_see(owner uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT app_is_service() OR owner = nullif(current_setting('app.user_id', true), '')::uuid
$$;

ALTER TABLE app_user ENABLE ROW LEVEL SECURITY;
ALTER TABLE app_user FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON app_user USING (app_may_see(id));
ALTER TABLE person ENABLE ROW LEVEL SECURITY;
ALTER TABLE person FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON person USING (app_may_see(user_id));
ALTER TABLE tag ENABLE ROW LEVEL SECURITY;
ALTER TABLE tag FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON tag USING (app_may_see(user_id));
ALTER TABLE meeting ENABLE ROW LEVEL SECURITY;
-- guard: rls-force-meeting | remove: ALTER TABLE meeting FORCE ROW LEVEL SECURITY; | test: test/security/tenant-isolation.test.ts :: a policy on every table
ALTER TABLE meeting FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON meeting USING (app_may_see(user_id));
ALTER TABLE transcript_segment ENABLE ROW LEVEL SECURITY;
ALTER TABLE transcript_segment FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON transcript_segment USING (app_may_see(user_id));
ALTER TABLE task ENABLE ROW LEVEL SECURITY;
ALTER TABLE task FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON task USING (app_may_see(user_id));
ALTER TABLE note ENABLE ROW LEVEL SECURITY;
ALTER TABLE note FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON note USING (app_may_see(user_id));
ALTER TABLE ai_thread ENABLE ROW LEVEL SECURITY;
ALTER TABLE ai_thread FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON ai_thread USING (app_may_see(user_id));
ALTER TABLE event_sequence ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_sequence FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON event_sequence USING (app_may_see(user_id));
ALTER TABLE event_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON event_outbox USING (app_may_see(user_id));
ALTER TABLE webhook ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON webhook USING (app_may_see(user_id));
ALTER TABLE account_erasure ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_erasure FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON account_erasure USING (app_may_see(user_id));
ALTER TABLE person_merge ENABLE ROW LEVEL SECURITY;
ALTER TABLE person_merge FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON person_merge USING (app_may_see(user_id));
ALTER TABLE account_export ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_export FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON account_export USING (app_may_see(user_id));
-- principal: the user's id as text, or 'service'.
ALTER TABLE idempotency_record ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_record FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON idempotency_record
  USING (app_is_service() OR principal = current_setting('app.user_id', true));
-- Through the parent (its own policy applies inside the EXISTS).
ALTER TABLE person_summary ENABLE ROW LEVEL SECURITY;
ALTER TABLE person_summary FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON person_summary
  USING (app_is_service() OR EXISTS (SELECT 1 FROM person p WHERE p.id = person_id));
ALTER TABLE meeting_audio_file ENABLE ROW LEVEL SECURITY;
ALTER TABLE meeting_audio_file FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON meeting_audio_file
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE meeting_attendee ENABLE ROW LEVEL SECURITY;
ALTER TABLE meeting_attendee FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON meeting_attendee
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE transcription ENABLE ROW LEVEL SECURITY;
ALTER TABLE transcription FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON transcription
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE segment_manifest ENABLE ROW LEVEL SECURITY;
ALTER TABLE segment_manifest FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON segment_manifest
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE meeting_speaker_label ENABLE ROW LEVEL SECURITY;
ALTER TABLE meeting_speaker_label FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON meeting_speaker_label
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE voice_sample ENABLE ROW LEVEL SECURITY;
ALTER TABLE voice_sample FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON voice_sample
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE recording_event_history ENABLE ROW LEVEL SECURITY;
ALTER TABLE recording_event_history FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON recording_event_history
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE topic ENABLE ROW LEVEL SECURITY;
ALTER TABLE topic FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON topic
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE talking_point ENABLE ROW LEVEL SECURITY;
ALTER TABLE talking_point FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON talking_point
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE recording ENABLE ROW LEVEL SECURITY;
ALTER TABLE recording FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON recording
  USING (app_is_service() OR EXISTS (SELECT 1 FROM meeting p WHERE p.id = meeting_id));
ALTER TABLE transcription_status_history ENABLE ROW LEVEL SECURITY;
ALTER TABLE transcription_status_history FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON transcription_status_history
  USING (app_is_service() OR EXISTS (SELECT 1 FROM transcription p WHERE p.id = transcription_id));
ALTER TABLE topic_segment ENABLE ROW LEVEL SECURITY;
ALTER TABLE topic_segment FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON topic_segment
  USING (app_is_service() OR EXISTS (SELECT 1 FROM topic p WHERE p.id = topic_id));
ALTER TABLE talking_point_segment ENABLE ROW LEVEL SECURITY;
ALTER TABLE talking_point_segment FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON talking_point_segment
  USING (app_is_service() OR EXISTS (SELECT 1 FROM talking_point p WHERE p.id = talking_point_id));
ALTER TABLE sub_task ENABLE ROW LEVEL SECURITY;
ALTER TABLE sub_task FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON sub_task
  USING (app_is_service() OR EXISTS (SELECT 1 FROM task p WHERE p.id = task_id));
ALTER TABLE chat_message ENABLE ROW LEVEL SECURITY;
ALTER TABLE chat_message FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON chat_message
  USING (app_is_service() OR EXISTS (SELECT 1 FROM ai_thread p WHERE p.id = thread_id));
ALTER TABLE webhook_delivery ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_delivery FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON webhook_delivery
  USING (app_is_service() OR EXISTS (SELECT 1 FROM webhook p WHERE p.id = webhook_id));
ALTER TABLE webhook_attempt ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_attempt FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON webhook_attempt
  USING (app_is_service() OR EXISTS (SELECT 1 FROM webhook p WHERE p.id = webhook_id));
-- ===== end of tenant isolation =====
