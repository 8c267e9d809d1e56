variable "project_id" {
  description = "Google Cloud project; one project per environment (topic and Firestore names are fixed)."
  type        = string
}

variable "region" {
  type    = string
  default = "europe-west1"
}

variable "name" {
  description = "Environment name; prefixes accounts, network, database, buckets and load balancer."
  type        = string
  default     = "dev"
}

variable "firestore_location" {
  description = "Firestore location; the region when null."
  type        = string
  default     = null
}

variable "domain" {
  description = "Domain served by the load balancer (managed certificate); also PUBLIC_BASE_URL."
  type        = string
}

variable "app_origins" {
  description = "Origins of the app, allowed to play audio from the bucket (CORS)."
  type        = list(string)
}

variable "app_env" {
  type    = string
  default = "staging"
}

variable "identity_jwks_url" {
  description = "IDENTITY_JWKS_URL of the identity provider."
  type        = string
}

variable "identity_issuer" {
  description = "IDENTITY_ISSUER of the identity provider."
  type        = string
}

variable "identity_audience" {
  type    = string
  default = ""
}

variable "ml_service_url" {
  description = "ML_SERVICE_URL."
  type        = string
}

variable "ml_service_account_email" {
  description = "Runtime account of the ML service (deployed elsewhere): reads the provider keys and the service token, consumes recording.finalized. Empty: no grants."
  type        = string
  default     = ""
}

variable "service_auth_token_rotation" {
  # While rotating SERVICE_AUTH_TOKEN: SERVICE_AUTH_TOKEN_PREVIOUS (the old value, added as a version
  # first) is mounted into every core unit, so both values are accepted. False once callers moved.
  description = "Mount SERVICE_AUTH_TOKEN_PREVIOUS while SERVICE_AUTH_TOKEN rotates (docs/deployment.md)."
  type        = bool
  default     = false
}

variable "log_level" {
  type    = string
  default = "info"
}

variable "otel_enabled" {
  type    = bool
  default = false
}

variable "otel_endpoint" {
  type    = string
  default = "http://localhost:4318"
}

variable "recording_settings" {
  description = "Overrides of RECORDING_* variables, e.g. { RECORDING_GAP_SWEEP_INTERVAL_SECONDS = \"30\" }."
  type        = map(string)
  default     = {}
}

variable "db_tier" {
  type    = string
  default = "db-custom-1-3840"
}

variable "db_availability_type" {
  type    = string
  default = "ZONAL"
}

# The connection budget's inputs (module "connections" in main.tf).
variable "db_max_connections" {
  description = "Cloud SQL max_connections; the budget of every unit at its instance limit must fit under it less the reserve."
  type        = number
  default     = 200
}

variable "db_pooling" {
  description = "Cloud SQL managed connection pooling (Enterprise Plus tiers only): on, and max_pool_size per pooler, database and user."
  type        = object({ enabled = bool, max_pool_size = number })
  default     = { enabled = false, max_pool_size = 10 }
}

variable "db_pool_max" {
  description = "DB_POOL_MAX per process of each unit (the live service: per worker)."
  type        = object({ api = number, sweep = number, live = number })
  default     = { api = 8, sweep = 2, live = 4 }
}

variable "api_max_instances" {
  type    = number
  default = 10
}

variable "live_min_instances" {
  type    = number
  default = 1
}

variable "live_max_instances" {
  type    = number
  default = 5
}

variable "live_cpu" {
  description = "vCPUs per live instance, one worker process each (LIVE_WORKERS), each with its own pool."
  type        = number
  default     = 2
}

variable "sweep_timeout_seconds" {
  type    = number
  default = 300
}

variable "deletion_protection" {
  description = "Guards the database, Firestore and the live service against destroy."
  type        = bool
  default     = true
}

variable "ml_rate_limit" {
  description = "The ML service's edge limit (modules/gateway): concurrent recordings, requests per recording-minute."
  type        = object({ recordings = number, requests_per_recording_minute = number })
  default     = { recordings = 1000, requests_per_recording_minute = 40 }
}

variable "rate_limit_exempt_ip_ranges" {
  description = "CIDR ranges Cloud Armor never rate limits (e.g. a trusted partner's static egress addresses)."
  type        = list(string)
  default     = []
}

variable "alert_notification_channels" {
  description = "Cloud Monitoring notification channel ids for the outbox lag and ack latency alerts."
  type        = list(string)
  default     = []
}
