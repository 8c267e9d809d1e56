output "network_id" {
  description = "The VPC network; ready for private IP only once the peering exists."
  value       = google_compute_network.this.id
  depends_on  = [google_service_networking_connection.private_services]
}

output "connector_id" {
  value = google_vpc_access_connector.this.id
}
