# Cloud Armor on both backends: per-client rate limits at the edge, so a flood is refused before
# it costs a function instance or a database connection. Cloud Armor applies the first rule that
# matches, and a rate rule under its threshold allows the request, so each request meets exactly
# one limit:
#   - a request with an Authorization header is throttled per header value: one user's (or
#     service's) token, however many addresses it comes from;
#   - a request without one (/healthz, /docs, WebSocket handshakes, whose token travels in the
#     hello message) is counted per client IP, and an address over the limit is banned a while.
# Over a limit the answer is 429; the error response policy in errors.tf adds Retry-After.

locals {
  # The paths of the operations only the service token may call (all of them writes); the RE2
  # syntax of Cloud Armor's request.path.matches. test/infra.test.ts holds it against the
  # OpenAPI document: every service-only operation matches, no operation a user may call does.
  ml_write_paths = "^/(transcriptions/[^/]+(/segments)?|meetings/[^/]+/(talking-points|synthesis|tasks))$"
}

resource "google_compute_security_policy" "edge" {
  project     = var.project_id
  name        = "${var.name}-edge"
  description = "Per-client rate limits in front of the api function and the live service."
  type        = "CLOUD_ARMOR"

  # Addresses that are never limited (e.g. a trusted partner's static egress addresses).
  dynamic "rule" {
    for_each = length(var.rate_limit_exempt_ip_ranges) > 0 ? [1] : []
    content {
      priority    = 500
      action      = "allow"
      description = "exempt addresses"
      match {
        versioned_expr = "SRC_IPS_V1"
        config {
          src_ip_ranges = var.rate_limit_exempt_ip_ranges
        }
      }
    }
  }

  # The ML service posts every user's segments and insights with one identity: its writes (the
  # routes only the service may call, ml_write_paths) get a per-token limit sized by recordings, not
  # by a user's budget (docs/deployment.md: ~40 requests per recording-minute; 1,000 recordings with
  # 2x headroom is 80,000 per 60 s). Matched here, they never meet the per-token rule. A user's
  # token on these routes is refused by the app, as a made-up token is on any route.
  rule {
    priority    = 900
    action      = "throttle"
    description = "the ML service's writes, sized by concurrent recordings"
    preview     = var.rate_limit_preview
    match {
      expr {
        expression = "request.method != 'GET' && request.path.matches('${local.ml_write_paths}')"
      }
    }
    rate_limit_options {
      conform_action      = "allow"
      exceed_action       = "deny(429)"
      enforce_on_key      = "HTTP_HEADER"
      enforce_on_key_name = "Authorization"
      rate_limit_threshold {
        count        = var.ml_rate_limit.recordings * var.ml_rate_limit.requests_per_recording_minute * 2
        interval_sec = 60
      }
    }
  }

  rule {
    priority    = 1000
    action      = "throttle"
    description = "per Authorization header value"
    preview     = var.rate_limit_preview
    match {
      expr {
        expression = "has(request.headers['authorization'])"
      }
    }
    rate_limit_options {
      conform_action      = "allow"
      exceed_action       = "deny(429)"
      enforce_on_key      = "HTTP_HEADER"
      enforce_on_key_name = "Authorization"
      rate_limit_threshold {
        count        = var.rate_limit_per_token.count
        interval_sec = var.rate_limit_per_token.interval_seconds
      }
    }
  }

  rule {
    priority    = 2000
    action      = "rate_based_ban"
    description = "per client IP, without an Authorization header"
    preview     = var.rate_limit_preview
    match {
      versioned_expr = "SRC_IPS_V1"
      config {
        src_ip_ranges = ["*"]
      }
    }
    rate_limit_options {
      conform_action   = "allow"
      exceed_action    = "deny(429)"
      enforce_on_key   = "IP"
      ban_duration_sec = var.rate_limit_per_ip.ban_seconds
      rate_limit_threshold {
        count        = var.rate_limit_per_ip.count
        interval_sec = var.rate_limit_per_ip.interval_seconds
      }
    }
  }

  # Cloud Armor requires a default rule; everything under the limits passes.
  rule {
    priority    = 2147483647
    action      = "allow"
    description = "default"
    match {
      versioned_expr = "SRC_IPS_V1"
      config {
        src_ip_ranges = ["*"]
      }
    }
  }
}
