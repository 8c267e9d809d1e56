variable "project_id" {
  type = string
}

variable "region" {
  description = "Region of the function and the Cloud Run service."
  type        = string
}

variable "name" {
  description = "Prefix of the load balancer's resources."
  type        = string
}

variable "domains" {
  description = "Domains of the managed certificate; their DNS A records point at the output address."
  type        = list(string)
}

variable "api_function_name" {
  type = string
}

variable "live_service_name" {
  type = string
}

variable "rate_limit_per_token" {
  description = "Requests per interval allowed per Authorization header value (throttle); interval_seconds one of Cloud Armor's: 10, 30, 60, 120, 180, 240, 300, 600, ..."
  type        = object({ count = number, interval_seconds = number })
  default     = { count = 600, interval_seconds = 60 }
}

variable "rate_limit_per_ip" {
  description = "Requests per interval allowed per client IP for requests without Authorization; an address over it is refused for ban_seconds."
  type        = object({ count = number, interval_seconds = number, ban_seconds = number })
  default     = { count = 1200, interval_seconds = 60, ban_seconds = 120 }
}

variable "rate_limit_exempt_ip_ranges" {
  description = "CIDR ranges never rate limited (e.g. a trusted partner's static egress addresses); at most 10."
  type        = list(string)
  default     = []
}

variable "ml_rate_limit" {
  description = "The ML service's edge limit: the concurrent recordings to serve and its requests per recording-minute (docs/deployment.md); the per-token threshold of its writes is their product with 2x headroom per 60 s."
  type        = object({ recordings = number, requests_per_recording_minute = number })
  default     = { recordings = 1000, requests_per_recording_minute = 40 }
}

variable "rate_limit_preview" {
  description = "Log what the rate rules would refuse without refusing it (Cloud Armor preview mode)."
  type        = bool
  default     = false
}
