# Environment of all three units: they run the same lib/config.ts. Every variable of the
# spec's Limits tables that applies in the cloud is set here, with the spec's defaults, so a
# deployment states its configuration instead of inheriting code defaults. PUBSUB_EMULATOR_HOST
# stays unset (real Pub/Sub); PORT comes from the platform. Credentials come from Secret
# Manager (var.secret_ids), never from plain variables.

locals {
  recording_defaults = {
    RECORDING_SEGMENT_TARGET_MS           = "2000"
    RECORDING_PROGRESS_EVERY_FRAMES       = "100"
    RECORDING_PROGRESS_INTERVAL_SECONDS   = "10"
    RECORDING_GAP_UPLOAD_DEADLINE_SECONDS = "1800"
    RECORDING_GAP_SWEEP_INTERVAL_SECONDS  = "30"
    RECORDING_STOP_SETTLE_MS              = "500"
    RECORDING_ML_START_TIMEOUT_SECONDS    = "10"
    RECORDING_ML_DRAIN_TIMEOUT_SECONDS    = "5"
    RECORDING_DISCONNECT_GRACE_SECONDS    = "120"
    RECORDING_MAX_CHUNK_BYTES             = "1048576"
    RECORDING_MAX_DURATION_SECONDS        = "14400"
    RECORDING_AUDIO_URL_TTL_SECONDS       = "900"
    RECORDING_MAX_UPLOAD_BYTES            = "536870912" # read by lib/config.ts beyond the spec table
  }

  recording = merge(local.recording_defaults, var.recording_settings)

  # Webhook delivery (docs/webhooks.md) runs in the live service's instances: the pinned retry
  # schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) and disabling after 5 days of failures.
  webhooks = {
    WEBHOOK_RETRY_SCHEDULE_SECONDS = "5,300,1800,7200,18000,36000,36000"
    WEBHOOK_DISABLE_AFTER_SECONDS  = "432000"
    WEBHOOK_POLL_MS                = "1000"
    WEBHOOK_MAX_IN_FLIGHT_PER_USER = "8"
    WEBHOOK_SECRET_OVERLAP_SECONDS = "86400"
  }

  all_env = merge(local.recording, local.webhooks, {
    APP_ENV                          = var.app_env
    LOG_LEVEL                        = var.log_level
    OTEL_ENABLED                     = tostring(var.otel_enabled)
    OTEL_EXPORTER_OTLP_ENDPOINT      = var.otel_endpoint
    OTEL_TRACES_SAMPLER_ARG          = tostring(var.trace_sample_ratio)
    GOOGLE_CLOUD_PROJECT             = var.project_id
    STORAGE_BUCKET                   = var.storage_bucket
    PUBSUB_TOPIC_EVENTS              = var.events_topic
    PUBSUB_TOPIC_RECORDING_FINALIZED = var.recording_finalized_topic
    ML_SERVICE_URL                   = var.ml_service_url
    ML_SERVICE_ACCOUNT_EMAILS        = var.ml_service_account_email
    PUBLIC_BASE_URL                  = var.public_base_url
    IDENTITY_JWKS_URL                = var.identity_jwks_url
    IDENTITY_ISSUER                  = var.identity_issuer
    IDENTITY_AUDIENCE                = var.identity_audience
    LIVE_CONNECTION_LIFETIME_SECONDS = tostring(var.live_connection_lifetime_seconds)
    CORS_ALLOWED_ORIGINS             = join(",", var.app_origins)
    MEETING_PURGE_AFTER_DAYS         = tostring(var.meeting_purge_after_days)
  })

  # Optional values left empty are not set at all.
  env = { for name, value in local.all_env : name => value if value != "" }
}
