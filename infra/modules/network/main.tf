# A private network for Cloud SQL (private IP through private services access) and a
# Serverless VPC Access connector through which the functions and the Cloud Run service
# reach it. Only private ranges go through the connector; public egress stays direct.

resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = var.name
  auto_create_subnetworks = false
}

resource "google_compute_subnetwork" "connector" {
  project                  = var.project_id
  name                     = "${var.name}-connector"
  region                   = var.region
  network                  = google_compute_network.this.id
  ip_cidr_range            = var.connector_cidr
  private_ip_google_access = true
}

resource "google_vpc_access_connector" "this" {
  project       = var.project_id
  name          = var.connector_name
  region        = var.region
  machine_type  = var.connector_machine_type
  min_instances = var.connector_min_instances
  max_instances = var.connector_max_instances

  subnet {
    name = google_compute_subnetwork.connector.name
  }
}

# Private services access: the range Cloud SQL takes its private IP from.
resource "google_compute_global_address" "private_services" {
  project       = var.project_id
  name          = "${var.name}-private-services"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 16
  network       = google_compute_network.this.id
}

resource "google_service_networking_connection" "private_services" {
  network                 = google_compute_network.this.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services.name]
}
