output "load_balancer_ip" {
  description = "Point the domain's A record here."
  value       = module.gateway.ip_address
}

output "public_url" {
  value = "https://${var.domain}"
}

output "deployer_service_account" {
  description = "Run Cloud Build as this account (trigger or gcloud builds submit --service-account)."
  value       = module.iam.ids.deployer
}

output "cloudbuild_substitutions" {
  description = "Pass to gcloud builds submit / triggers create as --substitutions=..."
  value = join(",", [for k, v in {
    _REGION                = var.region
    _IMAGE_REPO            = module.artifacts.repository_url
    _DOCKER_REPOSITORY     = module.artifacts.repository_id
    _SOURCES_BUCKET        = module.artifacts.bucket_name
    _BUILD_SERVICE_ACCOUNT = module.iam.ids.builder
    _SQL_INSTANCE          = module.database.connection_name
    _API_FUNCTION          = module.services.api_function_name
    _SWEEP_FUNCTION        = module.services.sweep_function_name
    _LIVE_SERVICE          = module.services.live_service_name
    _SWEEP_JOB             = module.scheduler.job_name
    _PUBLIC_URL            = "https://${var.domain}"
    # db:apply grants each unit's role to its login (DB_RUNTIME_LOGINS).
    _DB_LOGIN_API   = module.database.runtime_logins.api
    _DB_LOGIN_LIVE  = module.database.runtime_logins.live
    _DB_LOGIN_SWEEP = module.database.runtime_logins.sweep
  } : "${k}=${v}"])
}

output "ml_subscription" {
  description = "Subscription the ML batch worker consumes recording.finalized from."
  value       = module.pubsub.ml_subscription
}

output "sweep_schedule" {
  value = module.scheduler.schedule
}

output "live_service_account" {
  description = "The core's identity on its calls to the ML service: the ML accepts Google ID tokens of this email (audience its own URL)."
  value       = module.iam.emails.live
}

output "connection_budget" {
  description = "The database connection budget's worst case (docs/capacity.md)."
  value       = module.connections.connections
}
