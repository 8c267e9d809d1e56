output "ids" {
  description = "Secret id (short name) per variable name, as the services mount them."
  value       = { for name, s in google_secret_manager_secret.this : name => s.secret_id }
}

output "resource_ids" {
  description = "Full resource id per variable name (projects/P/secrets/ID)."
  value       = { for name, s in google_secret_manager_secret.this : name => s.id }
}
