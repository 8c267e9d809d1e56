# Cloud Armor's 429 carries no Retry-After of its own. The load balancer's custom error response
# policy (url map, main.tf) replaces every 429 with this problem+json document, served from a
# backend bucket whose custom response header adds Retry-After. The app itself answers no 429
# today; if it ever does, its own Retry-After would be replaced by this one.

locals {
  # A ban outlasts one interval: ask for the longer wait, so a retry is not refused again.
  retry_after_seconds = max(var.rate_limit_per_token.interval_seconds, var.rate_limit_per_ip.ban_seconds)
}

resource "google_storage_bucket" "errors" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-errors"
  location                    = var.region
  uniform_bucket_level_access = true
  force_destroy               = true
}

resource "google_storage_bucket_object" "too_many_requests" {
  bucket        = google_storage_bucket.errors.name
  name          = "errors/429.json"
  content_type  = "application/problem+json"
  cache_control = "no-store"
  content = jsonencode({
    type   = "https://meeting-intelligence.dev/problems/too_many_requests"
    title  = "Too Many Requests"
    status = 429
    detail = "Rate limit exceeded at the edge; retry after the number of seconds in Retry-After."
  })
}

# A backend bucket reads objects as an anonymous client: the bucket holds nothing but this page.
resource "google_storage_bucket_iam_member" "errors_public" {
  bucket = google_storage_bucket.errors.name
  role   = "roles/storage.objectViewer"
  member = "allUsers"
}

resource "google_compute_backend_bucket" "errors" {
  project                 = var.project_id
  name                    = "${var.name}-errors"
  bucket_name             = google_storage_bucket.errors.name
  custom_response_headers = ["Retry-After: ${local.retry_after_seconds}"]
}
