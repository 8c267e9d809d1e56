# One Secret Manager secret per credential, each with its own value: the spec forbids reusing
# the service token as the audio URL signing key. Terraform creates the containers only;
# values are added with `gcloud secrets versions add` so they never enter the Terraform state.
# DATABASE_OWNER_URL is the exception: the database module writes it from the generated password;
# only the migration step reads it (the runtime units log in as their service accounts).

locals {
  names = [
    "DATABASE_OWNER_URL",
    "IDENTITY_SECRET_KEY",
    "SERVICE_AUTH_TOKEN",
    "SERVICE_AUTH_TOKEN_PREVIOUS", # mounted only while a rotation lasts (service_auth_token_rotation)
    "AUDIO_URL_SIGNING_KEY",
    "PROVIDER_A_API_KEY", # ML service (MODEL_PROVIDER=provider_a)
    "PROVIDER_B_API_KEY", # ML service (MODEL_PROVIDER=provider_b)
  ]

  # One binding per (unit, secret) pair, keyed by static names.
  grants = merge([
    for unit, a in var.accessors : {
      for name in a.secrets : "${unit}/${name}" => { member = a.member, name = name }
    }
  ]...)
}

resource "google_secret_manager_secret" "this" {
  for_each = toset(local.names)

  project   = var.project_id
  secret_id = each.key

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_iam_member" "accessor" {
  for_each = local.grants

  project   = var.project_id
  secret_id = google_secret_manager_secret.this[each.value.name].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value.member
}
