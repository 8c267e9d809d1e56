output "connection_name" {
  description = "PROJECT:REGION:INSTANCE, for the Cloud SQL Auth Proxy."
  value       = google_sql_database_instance.this.connection_name
}
