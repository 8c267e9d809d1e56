output "emails" {
  description = "Service account email per unit (api, sweep, live, scheduler, deployer, builder)."
  value       = { for unit, sa in google_service_account.this : unit => sa.email }
}

output "members" {
  description = "IAM member string (serviceAccount:EMAIL) per unit."
  value       = { for unit, sa in google_service_account.this : unit => sa.member }
}

output "ids" {
  description = "Full resource id (projects/P/serviceAccounts/EMAIL) per unit."
  value       = { for unit, sa in google_service_account.this : unit => sa.id }
}
