output "ip_address" {
  description = "Point the domains' A records here."
  value       = google_compute_global_address.this.address
}
