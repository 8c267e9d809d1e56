variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "name" {
  type    = string
  default = "sweep"
}

variable "sweep_url" {
  description = "HTTPS URL of the sweep function."
  type        = string
}

variable "invoker_email" {
  description = "Service account whose OIDC token the job sends (holds run.invoker on the sweep)."
  type        = string
}

variable "interval_seconds" {
  description = "RECORDING_GAP_SWEEP_INTERVAL_SECONDS."
  type        = number
}

variable "attempt_deadline_seconds" {
  description = "How long the job waits for the sweep to answer (at most 1800)."
  type        = number
  default     = 320
}
