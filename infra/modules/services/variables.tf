variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "api_function_name" {
  type    = string
  default = "api"
}

variable "sweep_function_name" {
  type    = string
  default = "sweep"
}

variable "live_service_name" {
  type    = string
  default = "live"
}

variable "service_accounts" {
  description = "Runtime service account emails."
  type = object({
    api   = string
    sweep = string
    live  = string
  })
}

variable "builder_service_account_id" {
  description = "Full id (projects/P/serviceAccounts/EMAIL) of the account that builds function sources."
  type        = string
}

variable "scheduler_member" {
  description = "IAM member of the Cloud Scheduler job's account, the only caller of the sweep."
  type        = string
}

variable "vpc_connector_id" {
  type = string
}

variable "docker_repository_id" {
  description = "Artifact Registry repository for the images Cloud Functions builds."
  type        = string
}

variable "source_bucket" {
  description = "Bucket of function source bundles (holds the placeholder bundle too)."
  type        = string
}

variable "live_image" {
  description = "Image of the live service's first revision; later ones come from Cloud Build."
  type        = string
  default     = "us-docker.pkg.dev/cloudrun/container/hello"
}

variable "secret_ids" {
  # SERVICE_AUTH_TOKEN_PREVIOUS only while a rotation of the service token lasts.
  description = "Secret Manager secret id per credential variable; mounted into every unit."
  type        = map(string)

  validation {
    condition = alltrue([
      for name in ["IDENTITY_SECRET_KEY", "SERVICE_AUTH_TOKEN", "AUDIO_URL_SIGNING_KEY"] :
      contains(keys(var.secret_ids), name)
    ])
    error_message = "secret_ids: IDENTITY_SECRET_KEY, SERVICE_AUTH_TOKEN, AUDIO_URL_SIGNING_KEY required."
  }

  validation {
    # The runtime units log in as their service accounts; the owner's password is the migration step's.
    condition     = !contains(keys(var.secret_ids), "DATABASE_OWNER_URL") && !contains(keys(var.secret_ids), "DATABASE_URL")
    error_message = "secret_ids: no database credential (DATABASE_URL comes from database_urls)."
  }
}

variable "database_urls" {
  description = "DATABASE_URL per unit (api, sweep, live): its own IAM database user, no password (database module)."
  type        = object({ api = string, sweep = string, live = string })
}

variable "connections" {
  description = "Per unit (api, sweep, live): max_instances, processes per instance and pool (DB_POOL_MAX per process), from the connection budget (modules/connections)."
  type = object({
    api   = object({ max_instances = number, processes = number, pool = number })
    sweep = object({ max_instances = number, processes = number, pool = number })
    live  = object({ max_instances = number, processes = number, pool = number })
  })

  validation {
    # The budget counts a pool per live worker: LIVE_WORKERS is live_cpu.
    condition     = var.connections.live.processes == var.live_cpu
    error_message = "connections.live.processes must be live_cpu (one worker, one pool, per vCPU)."
  }
}

variable "app_env" {
  description = "APP_ENV. development and test are local modes (HS256 tokens, emulator defaults)."
  type        = string
  default     = "production"

  validation {
    condition     = contains(["staging", "production"], var.app_env)
    error_message = "app_env: staging or production in the cloud."
  }
}

variable "log_level" {
  type    = string
  default = "info"
}

variable "otel_enabled" {
  type    = bool
  default = false
}

variable "trace_sample_ratio" {
  description = "OTEL_TRACES_SAMPLER_ARG: the share of traces started by the services that are recorded (a caller's sampled traceparent is always followed)."
  type        = number
  default     = 0.1
  validation {
    condition     = var.trace_sample_ratio >= 0 && var.trace_sample_ratio <= 1
    error_message = "trace_sample_ratio is a share, from 0 to 1."
  }
}

variable "otel_endpoint" {
  description = "OTEL_EXPORTER_OTLP_ENDPOINT."
  type        = string
  default     = "http://localhost:4318"
}

variable "storage_bucket" {
  type = string
}

variable "events_topic" {
  type = string
}

variable "recording_finalized_topic" {
  type = string
}

variable "ml_service_url" {
  type = string
}

variable "ml_service_account_email" {
  description = "ML_SERVICE_ACCOUNT_EMAILS: the ML service account whose Google-signed ID tokens the core accepts (empty: none)."
  type        = string
  default     = ""
}

variable "public_base_url" {
  description = "PUBLIC_BASE_URL: the load balancer's https origin."
  type        = string
}

variable "identity_jwks_url" {
  type = string
}

variable "identity_issuer" {
  type = string
}

variable "identity_audience" {
  type    = string
  default = ""
}

variable "live_connection_lifetime_seconds" {
  type    = number
  default = 3300

  validation {
    condition     = var.live_connection_lifetime_seconds < 3600
    error_message = "live_connection_lifetime_seconds must end before Cloud Run's 3600 s request timeout."
  }
}

variable "recording_settings" {
  description = "Overrides of the RECORDING_* variables (values as strings)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for name in keys(var.recording_settings) : startswith(name, "RECORDING_")])
    error_message = "recording_settings: only RECORDING_* variables."
  }
}

variable "function_memory" {
  type    = string
  default = "512Mi"
}

variable "api_timeout_seconds" {
  description = "Covers audio playback through GET /meetings/{id}/audio."
  type        = number
  default     = 300
}

variable "api_min_instances" {
  type    = number
  default = 0
}

variable "api_concurrency" {
  type    = number
  default = 40

  validation {
    condition     = var.api_concurrency > 1
    error_message = "api_concurrency must be above 1."
  }
}

variable "sweep_timeout_seconds" {
  description = "One sweep invocation runs passes for a minute (see the scheduler module), then finishes."
  type        = number
  default     = 300
}

variable "live_min_instances" {
  type    = number
  default = 1

  validation {
    condition     = var.live_min_instances >= 1
    error_message = "live_min_instances must be at least 1."
  }
}

variable "live_cpu" {
  description = "vCPUs per live instance; the server runs one worker process per vCPU (LIVE_WORKERS)."
  type        = number
  default     = 2

  validation {
    # Whole CPUs only: a worker is one Node process, and Cloud Run allows 1, 2, 4 or 8.
    condition     = contains([1, 2, 4, 8], var.live_cpu)
    error_message = "live_cpu must be 1, 2, 4 or 8."
  }
}

variable "live_connections_per_cpu" {
  description = "WebSocket connections one worker (one core) takes; the instance's concurrency is this times live_cpu (BENCHMARKS.md, Live)."
  type        = number
  default     = 250
}

variable "live_memory" {
  description = "About 1 GiB per worker: a worker's base plus ~0.6-0.9 MiB per recording (BENCHMARKS.md, Live)."
  type        = string
  default     = "2Gi"
}

variable "deletion_protection" {
  type    = bool
  default = true
}

variable "app_origins" {
  description = "Browser origins of the app, allowed to call the API (CORS_ALLOWED_ORIGINS)."
  type        = list(string)
}

variable "meeting_purge_after_days" {
  description = "MEETING_PURGE_AFTER_DAYS: soft-deleted meetings are purged by the sweep after this many days."
  type        = number
  default     = 30

  validation {
    condition     = var.meeting_purge_after_days >= 1 && floor(var.meeting_purge_after_days) == var.meeting_purge_after_days
    error_message = "meeting_purge_after_days must be a whole number of days, at least 1."
  }
}

variable "otel_collector_image" {
  description = "The OpenTelemetry Collector sidecar of the live service (Google-built, with the googlemanagedprometheus and googlecloud exporters)."
  type        = string
  default     = "us-docker.pkg.dev/cloud-ops-agents-artifacts/google-cloud-opentelemetry-collector/otelcol-google:0.121.0"
}

variable "alert_notification_channels" {
  description = "Cloud Monitoring notification channel ids the alert policies notify (alerts.tf)."
  type        = list(string)
  default     = []
}

variable "outbox_lag_alert_seconds" {
  description = "Alert when the oldest unpublished outbox event is older than this (the sweep republishes every minute)."
  type        = number
  default     = 300
}

variable "ack_latency_p99_alert_ms" {
  description = "Alert when the p99 of frame-to-acknowledgement latency exceeds this (progress events come every RECORDING_PROGRESS_INTERVAL_SECONDS, 10 s, at the latest)."
  type        = number
  default     = 15000
}
