output "connection_name" {
  description = "PROJECT:REGION:INSTANCE, for the Cloud SQL Auth Proxy."
  value       = google_sql_database_instance.this.connection_name
}

output "runtime_logins" {
  description = "Database user per runtime unit (its service account email without .gserviceaccount.com); db:apply grants each its unit's role."
  value       = { for unit, u in google_sql_user.runtime : unit => u.name }
}

output "runtime_urls" {
  description = "DATABASE_URL per runtime unit: its IAM user, no password (the unit presents a token, DB_IAM_AUTH), pooled port when pooling is on."
  value = {
    for unit, u in google_sql_user.runtime : unit =>
    "postgresql://${urlencode(u.name)}@${google_sql_database_instance.this.private_ip_address}:${local.port}/${google_sql_database.app.name}?sslmode=no-verify"
  }
}
