# Global external Application Load Balancer: one https origin for the app. `/ws` and `/ws/*`
# go to the live Cloud Run service, everything else to the api function, both through
# serverless NEGs. Serverless backends take no timeout or health check settings: the
# WebSocket lifetime is the Cloud Run request timeout. Port 80 only redirects to https.
# Both backends sit behind the Cloud Armor policy of armor.tf (per-client rate limits).

resource "google_compute_global_address" "this" {
  project = var.project_id
  name    = "${var.name}-ip"
}

resource "google_compute_region_network_endpoint_group" "api" {
  project               = var.project_id
  name                  = "${var.name}-api"
  region                = var.region
  network_endpoint_type = "SERVERLESS"

  cloud_function {
    function = var.api_function_name
  }
}

resource "google_compute_region_network_endpoint_group" "live" {
  project               = var.project_id
  name                  = "${var.name}-live"
  region                = var.region
  network_endpoint_type = "SERVERLESS"

  cloud_run {
    service = var.live_service_name
  }
}

resource "google_compute_backend_service" "api" {
  project               = var.project_id
  name                  = "${var.name}-api"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  protocol              = "HTTPS"
  security_policy       = google_compute_security_policy.edge.id

  backend {
    group = google_compute_region_network_endpoint_group.api.id
  }

  log_config {
    enable      = true
    sample_rate = 1.0
  }
}

resource "google_compute_backend_service" "live" {
  project               = var.project_id
  name                  = "${var.name}-live"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  protocol              = "HTTPS"
  security_policy       = google_compute_security_policy.edge.id

  backend {
    group = google_compute_region_network_endpoint_group.live.id
  }

  log_config {
    enable      = true
    sample_rate = 1.0
  }
}

resource "google_compute_url_map" "https" {
  project         = var.project_id
  name            = var.name
  default_service = google_compute_backend_service.api.id

  # Cloud Armor's 429 becomes problem+json with Retry-After (errors.tf).
  default_custom_error_response_policy {
    error_service = google_compute_backend_bucket.errors.id
    error_response_rule {
      match_response_codes   = ["429"]
      path                   = "/${google_storage_bucket_object.too_many_requests.name}"
      override_response_code = 429
    }
  }

  host_rule {
    hosts        = ["*"]
    path_matcher = "routes"
  }

  path_matcher {
    name            = "routes"
    default_service = google_compute_backend_service.api.id

    path_rule {
      paths   = ["/ws", "/ws/*"]
      service = google_compute_backend_service.live.id
    }
  }
}

# A managed certificate's domains cannot change in place: a new name per domain set lets
# the new certificate be created before the old one goes.
resource "google_compute_managed_ssl_certificate" "this" {
  project = var.project_id
  name    = "${var.name}-${substr(sha1(join(",", var.domains)), 0, 8)}"

  managed {
    domains = var.domains
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "google_compute_target_https_proxy" "this" {
  project          = var.project_id
  name             = "${var.name}-https"
  url_map          = google_compute_url_map.https.id
  ssl_certificates = [google_compute_managed_ssl_certificate.this.id]
}

resource "google_compute_global_forwarding_rule" "https" {
  project               = var.project_id
  name                  = "${var.name}-https"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  ip_address            = google_compute_global_address.this.id
  port_range            = "443"
  target                = google_compute_target_https_proxy.this.id
}

resource "google_compute_url_map" "redirect" {
  project = var.project_id
  name    = "${var.name}-redirect"

  default_url_redirect {
    https_redirect         = true
    redirect_response_code = "MOVED_PERMANENTLY_DEFAULT"
    strip_query            = false
  }
}

resource "google_compute_target_http_proxy" "redirect" {
  project = var.project_id
  name    = "${var.name}-redirect"
  url_map = google_compute_url_map.redirect.id
}

resource "google_compute_global_forwarding_rule" "http" {
  project               = var.project_id
  name                  = "${var.name}-http"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  ip_address            = google_compute_global_address.this.id
  port_range            = "80"
  target                = google_compute_target_http_proxy.redirect.id
}
